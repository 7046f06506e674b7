/**
 * Cleaning an NVMe SSD (docs/cleaning.md), choosing by what the controller reports in
 * `nvme id-ctrl <dev> -o json` (nvme-cli; NVMe Base Specification, Identify Controller):
 *
 * - `sanicap` (Sanitize Capabilities) bit 1 block erase, bit 0 crypto erase, bit 2 overwrite →
 *   `nvme sanitize <dev> --sanact=<2|4|3>` (in that order of preference), then `nvme sanitize-log
 *   <dev> -o json` polled until the Sanitize Status (`sstat` bits 2:0) leaves 2 (in progress):
 *   1 or 4 is success, 3 failure;
 * - else `oacs` (Optional Admin Command Support) bit 1 Format NVM → `nvme format <ns> --ses=<2|1>
 *   --force` for each namespace (`--ses=2` crypto erase when `fna` bit 2 says it is supported, else
 *   1 user data erase; `--force` skips nvme-cli's 10-second warning);
 * - else CLEAN_UNSUPPORTED, as when nvme-cli is not installed.
 *
 * Verify: a sanitize reads the log back (status success); a format finds the controller at its
 * address with the same serial and every namespace present again. Neither reads the media.
 */
import type { HostProbe } from '../driver.js'
import {
  CleanErrorCode,
  CleanMethod,
  cleanError,
  evidenceLine,
  isCommandMissing,
  sleep,
  throwIfCleanAborted,
  type CleanCallOptions,
  type CleanResult,
  type CleanTarget,
  type VerifyResult,
} from '../clean.js'
import { controlPathAddress } from '../../domain/inventory/inventory.js'
import { readDirOptional } from '../pci/pci-sysfs.js'
import { errorMessage } from '../../domain/error-message.js'

const DRIVER = 'nvme-ssd'

/** Default `clean_timeout` of nvme-ssd, in seconds (a block erase or overwrite takes long). */
export const NVME_CLEAN_TIMEOUT_S = 3600

/** What `id-ctrl` says the controller can do. */
export interface NvmeEraseCaps {
  /** Sanitize Capabilities. */
  sanicap: number
  /** Optional Admin Command Support. */
  oacs: number
  /** Format NVM Attributes. */
  fna: number
}

/** The fields of `nvme id-ctrl -o json` used here; undefined if it is not that JSON. */
export function parseIdCtrl(text: string): NvmeEraseCaps | undefined {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  if (json === null || typeof json !== 'object') return undefined
  const o = json as Record<string, unknown>
  const num = (k: string) => (typeof o[k] === 'number' ? o[k] : 0)
  if (typeof o.oacs !== 'number' && typeof o.sanicap !== 'number') return undefined
  return { sanicap: num('sanicap'), oacs: num('oacs'), fna: num('fna') }
}

/** The erase to run: a sanitize action, a format with a secure erase setting, or none (pure). */
export function chooseErase(
  caps: NvmeEraseCaps,
): { kind: 'sanitize'; sanact: 2 | 3 | 4 } | { kind: 'format'; ses: 1 | 2 } | undefined {
  if (caps.sanicap & 0b010) return { kind: 'sanitize', sanact: 2 }
  if (caps.sanicap & 0b001) return { kind: 'sanitize', sanact: 4 }
  if (caps.sanicap & 0b100) return { kind: 'sanitize', sanact: 3 }
  if (caps.oacs & 0b10) return { kind: 'format', ses: caps.fna & 0b100 ? 2 : 1 }
  return undefined
}

/**
 * The Sanitize Status of `nvme sanitize-log -o json` (bits 2:0 of `sstat`: 0 never, 1 success,
 * 2 in progress, 3 failed, 4 success without deallocation) and the progress (`sprog`/65536).
 * nvme-cli 2.x nests the log under the device name, 1.x does not. Undefined if unreadable.
 */
export function parseSanitizeLog(text: string): { status: number; progress: number } | undefined {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  if (json === null || typeof json !== 'object') return undefined
  const top = json as Record<string, unknown>
  const body = (
    'sstat' in top ? top : Object.values(top).find((v) => v !== null && typeof v === 'object')
  ) as Record<string, unknown> | undefined
  const sstat = body?.sstat
  if (typeof sstat !== 'number') return undefined
  const sprog = typeof body?.sprog === 'number' ? body.sprog : 0
  return { status: sstat & 0b111, progress: sprog / 65536 }
}

/** Options of {@link createNvmeCleanSteps}. */
export interface NvmeCleanConfig {
  /** The sysfs class root (`/sys/class/nvme`). */
  root: string
  /** The controller (`nvme0`) and its serial for a PCI address, undefined if none. */
  findController: (address: string) => Promise<{ name: string; serial: string } | undefined>
  /** Time limit given to the erase command. */
  timeoutMs: number
  /** Milliseconds between two reads of the sanitize log. */
  pollMs: number
}

/** The nvme-ssd driver's `clean` and `verify`. */
export function createNvmeCleanSteps(host: HostProbe, config: NvmeCleanConfig) {
  const { root, findController, timeoutMs, pollMs } = config

  /** Runs nvme-cli; a missing nvme-cli is CLEAN_UNSUPPORTED, a failure `code`. */
  const nvme = async (
    args: string[],
    code: CleanErrorCode = CleanErrorCode.FAILED,
    exec: { timeoutMs?: number } = {},
  ): Promise<string> => {
    try {
      const out = await host.exec('nvme', args, exec)
      return typeof out === 'string' ? out : ''
    } catch (err) {
      const missing = isCommandMissing(err)
      throw cleanError(
        DRIVER,
        missing ? CleanErrorCode.UNSUPPORTED : code,
        missing
          ? 'nvme-cli is not installed'
          : `nvme ${args.join(' ')} failed: ${errorMessage(err)}`,
        { cause: err },
      )
    }
  }

  const controllerOf = async (target: CleanTarget) => {
    const address = controlPathAddress(target.controlPath)
    const c = await findController(address)
    if (!c) {
      throw cleanError(DRIVER, CleanErrorCode.FAILED, `no NVMe controller at ${address}`, {
        details: { address },
      })
    }
    return { address, ...c }
  }

  const readLog = async (dev: string, code: CleanErrorCode) => {
    const args = ['sanitize-log', dev, '-o', 'json']
    const text = await nvme(args, code)
    const log = parseSanitizeLog(text)
    if (!log) throw cleanError(DRIVER, code, `cannot read ${evidenceLine('nvme', args, text)}`)
    return { log, line: evidenceLine('nvme', args, text) }
  }

  return {
    async clean(target: CleanTarget, { signal }: CleanCallOptions = {}): Promise<CleanResult> {
      throwIfCleanAborted(DRIVER, signal)
      const c = await controllerOf(target)
      const dev = `/dev/${c.name}`
      const idArgs = ['id-ctrl', dev, '-o', 'json']
      const caps = parseIdCtrl(await nvme(idArgs))
      if (!caps)
        throw cleanError(DRIVER, CleanErrorCode.FAILED, `cannot read nvme id-ctrl of ${dev}`)
      const erase = chooseErase(caps)
      const seen = `${dev} (${c.address}): sanicap ${caps.sanicap}, oacs ${caps.oacs}, fna ${caps.fna}`
      const state = { address: c.address, controller: c.name, serial: c.serial }
      if (erase === undefined) {
        throw cleanError(
          DRIVER,
          CleanErrorCode.UNSUPPORTED,
          `${dev} reports neither sanitize (sanicap) nor Format NVM (oacs)`,
          { details: { ...state, ...caps } },
        )
      }
      throwIfCleanAborted(DRIVER, signal)
      if (erase.kind === 'sanitize') {
        const args = ['sanitize', dev, `--sanact=${erase.sanact}`]
        const out = await nvme(args, CleanErrorCode.FAILED, { timeoutMs })
        const evidence = [seen, evidenceLine('nvme', args, out)]
        for (;;) {
          const { log, line } = await readLog(dev, CleanErrorCode.FAILED)
          if (log.status === 3) {
            throw cleanError(DRIVER, CleanErrorCode.FAILED, `sanitize of ${dev} failed\n${line}`, {
              details: state,
            })
          }
          if (log.status === 1 || log.status === 4) {
            evidence.push(line)
            break
          }
          await sleep(pollMs, signal).catch((err: unknown) => {
            throw cleanError(DRIVER, CleanErrorCode.ABORTED, 'clean aborted', { cause: err })
          })
        }
        return { method: CleanMethod.NVME_SANITIZE, evidence: evidence.join('\n'), state }
      }
      const namespaces = (await readDirOptional(host, `${root}/${c.name}`))
        .filter((n) => /^nvme\d+n\d+$/.test(n))
        .sort()
      if (namespaces.length === 0) {
        throw cleanError(DRIVER, CleanErrorCode.FAILED, `${dev} has no namespace to format`, {
          details: state,
        })
      }
      const evidence = [seen]
      for (const ns of namespaces) {
        throwIfCleanAborted(DRIVER, signal)
        const args = ['format', `/dev/${ns}`, `--ses=${erase.ses}`, '--force']
        evidence.push(
          evidenceLine('nvme', args, await nvme(args, CleanErrorCode.FAILED, { timeoutMs })),
        )
      }
      return {
        method: CleanMethod.NVME_FORMAT_SES,
        evidence: evidence.join('\n'),
        state: { ...state, namespaces: namespaces.join(',') },
      }
    },

    async verify(
      target: CleanTarget,
      cleaned: CleanResult,
      { signal }: CleanCallOptions = {},
    ): Promise<VerifyResult> {
      throwIfCleanAborted(DRIVER, signal)
      const state = cleaned.state ?? {}
      const fail = (problem: string) =>
        cleanError(
          DRIVER,
          CleanErrorCode.VERIFY_FAILED,
          `after the clean of ${state.address}: ${problem}`,
          {
            details: { state },
          },
        )
      const c = await findController(controlPathAddress(target.controlPath))
      if (!c || c.name !== state.controller) throw fail(`controller ${state.controller} is gone`)
      if (c.serial !== state.serial) throw fail(`serial reads ${c.serial}, was ${state.serial}`)
      if (cleaned.method === CleanMethod.NVME_SANITIZE) {
        const { log, line } = await readLog(`/dev/${c.name}`, CleanErrorCode.VERIFY_FAILED)
        if (log.status !== 1 && log.status !== 4)
          throw fail(`sanitize status ${log.status}\n${line}`)
        return { evidence: line }
      }
      const present = await readDirOptional(host, `${root}/${c.name}`)
      const missing = (state.namespaces ?? '').split(',').filter((n) => n && !present.includes(n))
      if (missing.length > 0) throw fail(`namespaces missing: ${missing.join(', ')}`)
      return { evidence: `${c.name} serial ${c.serial}, namespaces ${state.namespaces} present` }
    },
  }
}
