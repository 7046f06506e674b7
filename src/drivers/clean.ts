/**
 * Cleaning a unit before reuse (issue 18, docs/cleaning.md): the types of the optional `clean` and
 * `verify` capabilities of `AcceleratorDriver`, the `clean` / `clean_timeout` options every driver
 * parses the same way, and {@link runClean}, which the agent calls: it applies the policy, runs
 * `clean` then `verify` under one time limit, and returns what the ledger records.
 *
 * Failures are DriverErrors with one of the {@link CleanErrorCode} codes, so that the caller can
 * tell "this host cannot clean this unit" (CLEAN_UNSUPPORTED: a tool is missing, or the device
 * says it cannot) from "the clean ran and failed" (CLEAN_FAILED, VERIFY_FAILED, CLEAN_TIMEOUT).
 */
import { AppError, ConfigError, DriverError } from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import type { Logger } from '../domain/logger.js'
import type { AcceleratorDriver } from './driver.js'
import { choiceOption } from './health.js'
import {
  CleanMethod,
  type CleanCallOptions,
  type CleanPolicy,
  type CleanResult,
  type CleanSettings,
  type CleanTarget,
  type VerifyResult,
} from './clean-types.js'

export {
  CleanMethod,
  type CleanCallOptions,
  type CleanPolicy,
  type CleanResult,
  type CleanSettings,
  type CleanTarget,
  type VerifyResult,
}

/** The error codes of cleaning. */
export const CleanErrorCode = {
  /** The host cannot clean this unit: a tool or sysfs file is missing, or the device reports it unsupported. */
  UNSUPPORTED: 'CLEAN_UNSUPPORTED',
  /** The unit is in use on the host (a process on the GPU); retry later. */
  BUSY: 'CLEAN_BUSY',
  /** The clean ran and failed. */
  FAILED: 'CLEAN_FAILED',
  /** The clean ran, but what was read back afterwards is wrong. */
  VERIFY_FAILED: 'VERIFY_FAILED',
  /** `clean_timeout` passed; the operation may still be running on the host. */
  TIMEOUT: 'CLEAN_TIMEOUT',
  /** The caller's signal aborted the clean. */
  ABORTED: 'CLEAN_ABORTED',
  /** The target does not name a unit this driver can clean (no PCI address, no mdev uuid). */
  TARGET_INVALID: 'CLEAN_TARGET_INVALID',
} as const
export type CleanErrorCode = (typeof CleanErrorCode)[keyof typeof CleanErrorCode]

/** A DriverError with a clean code, naming the driver. */
export function cleanError(
  driver: string,
  code: CleanErrorCode,
  message: string,
  extra: { details?: Record<string, unknown>; cause?: unknown } = {},
): DriverError {
  return new DriverError(`${driver}: ${message}`, {
    code,
    details: { driver, ...extra.details },
    ...(extra.cause === undefined ? {} : { cause: extra.cause }),
  })
}

/** Throws CLEAN_ABORTED if the signal fired (drivers call it between host calls). */
export function throwIfCleanAborted(driver: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw cleanError(driver, CleanErrorCode.ABORTED, 'clean aborted', { cause: signal.reason })
  }
}

/** True when `err` says a command is not installed (the probe's COMMAND_NOT_FOUND). */
export function isCommandMissing(err: unknown): boolean {
  if (err instanceof AppError) return err.code === 'COMMAND_NOT_FOUND'
  return /command not found/i.test(errorMessage(err))
}

/** The exit code a failed command carried (node-host-probe's `details.exitCode`), if any. */
export function exitCodeOf(err: unknown): number | undefined {
  const code = err instanceof AppError ? err.details?.exitCode : undefined
  return typeof code === 'number' ? code : undefined
}

/** Options of clean every driver takes (strings, from `[<driver>]` in cyborg.conf). */
export interface CleanOptions {
  /** `auto` or `none`. @default 'auto' */
  clean?: string
  /** Seconds `clean` and `verify` may take together; at least 1. @default the driver's (e.g. 60 for an FLR) */
  clean_timeout?: string
}

/** Default `clean_timeout` of the function-reset drivers (pci, intel-qat, intel-nic), in seconds. */
export const FLR_CLEAN_TIMEOUT_S = 60

/**
 * The clean settings from a driver's options.
 * @throws ConfigError naming the driver and the option
 */
export function cleanSettings(
  driver: string,
  options: Readonly<CleanOptions>,
  defaultTimeoutS: number,
): CleanSettings {
  const opts = options as Readonly<Record<string, string | undefined>>
  const policy = choiceOption(driver, opts, 'clean', ['auto', 'none'] as const, 'auto')
  const raw: unknown = opts.clean_timeout
  const text = raw === undefined || raw === null ? '' : String(raw as string | number).trim()
  if (text !== '' && !/^[1-9]\d{0,6}$/.test(text)) {
    throw new ConfigError(
      `${driver} driver option clean_timeout: must be a whole number of seconds from 1, got '${text}'`,
      { code: 'INVALID_DRIVER_OPTION', details: { driver, option: 'clean_timeout' } },
    )
  }
  return { policy, timeoutMs: (text === '' ? defaultTimeoutS : Number(text)) * 1000 }
}

/** Options of {@link runClean}; each overrides the driver's own `cleanSettings`. */
export interface RunCleanOptions {
  /** @default driver.cleanSettings.policy, else 'auto' */
  policy?: CleanPolicy
  /** @default driver.cleanSettings.timeoutMs, else 60 s */
  timeoutMs?: number
  /** The caller's own abort (agent shutdown): CLEAN_ABORTED. */
  signal?: AbortSignal
  /** Where `clean = none` is logged as the operator's choice. @default none */
  log?: Logger
  /** The clock for `durationMs`. @default Date.now */
  now?: () => number
  /**
   * Told the promise of the driver's own clean-and-verify step once it starts. It settles when the
   * step has ended, which may be after `runClean` answers (a time-out or an abort that the driver
   * ignores): the agent waits for it before it says that no clean runs on the unit.
   */
  onStep?: (step: Promise<unknown>) => void
}

/** What {@link runClean} returns: the clean's result, the verify's evidence, and the policy. */
export interface CleanReport extends CleanResult {
  policy: CleanPolicy
  /** What `verify` read back; absent with `clean = none` or when the driver has no verify step. */
  verifyEvidence?: string
  /** Milliseconds `clean` and `verify` took. */
  durationMs: number
}

/**
 * Cleans one unit: with `none`, returns `method: 'none'` without touching the host (and logs it as
 * the operator's choice); with `auto`, runs the driver's `clean` then its `verify`, together within
 * the time limit.
 * @throws DriverError CLEAN_UNSUPPORTED when the driver has no clean step; the driver's own
 * CLEAN_* / VERIFY_FAILED errors; CLEAN_TIMEOUT when the time limit passes (the step may still be
 * running on the host: the unit must stay out of service); CLEAN_ABORTED on the caller's signal
 */
export async function runClean(
  driver: AcceleratorDriver,
  target: CleanTarget,
  options: RunCleanOptions = {},
): Promise<CleanReport> {
  const {
    policy = driver.cleanSettings?.policy ?? 'auto',
    timeoutMs = driver.cleanSettings?.timeoutMs ?? FLR_CLEAN_TIMEOUT_S * 1000,
    signal: outer,
    log,
    now = Date.now,
    onStep,
  } = options
  const started = now()
  if (policy === 'none') {
    log?.warn(
      { driver: driver.name, handle: target.handle },
      'unit not cleaned before reuse: clean = none (operator choice)',
    )
    return {
      policy,
      method: CleanMethod.NONE,
      evidence: `clean = none for driver ${driver.name}: not cleaned (operator choice)`,
      durationMs: 0,
    }
  }
  if (driver.clean === undefined) {
    throw cleanError(driver.name, CleanErrorCode.UNSUPPORTED, 'driver has no clean step')
  }
  throwIfCleanAborted(driver.name, outer)
  // One controller for the time limit and the caller's abort (cheaper per clean than AbortSignal.any).
  const timer = new AbortController()
  const signal = timer.signal
  const forward = () => timer.abort(outer?.reason)
  outer?.addEventListener('abort', forward, { once: true })
  let onAbort: (() => void) | undefined
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () =>
      reject(
        outer?.aborted
          ? cleanError(driver.name, CleanErrorCode.ABORTED, 'clean aborted', {
              cause: outer.reason,
            })
          : cleanError(
              driver.name,
              CleanErrorCode.TIMEOUT,
              `clean did not finish within ${timeoutMs} ms`,
              { details: { timeoutMs } },
            ),
      )
    signal.addEventListener('abort', onAbort, { once: true })
  })
  const handle = setTimeout(() => timer.abort(), timeoutMs)
  try {
    const step = (async (): Promise<CleanReport> => {
      const result = await driver.clean!(target, { signal })
      const verified = await driver.verify?.(target, result, { signal })
      return {
        ...result,
        policy,
        ...(verified === undefined ? {} : { verifyEvidence: verified.evidence }),
        durationMs: now() - started,
      }
    })()
    onStep?.(step)
    // A driver that ignores the signal still loses the race: the caller learns of the time-out.
    return await Promise.race([aborted, step])
  } finally {
    clearTimeout(handle)
    outer?.removeEventListener('abort', forward)
    if (onAbort) signal.removeEventListener('abort', onAbort)
  }
}

/** An abortable wait (polling a sanitize, the fake driver's delay). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error)
      return
    }
    const onAbort = () => {
      clearTimeout(t)
      reject(signal!.reason as Error)
    }
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** `$ command args` then its output, for evidence. */
export function evidenceLine(command: string, args: readonly string[], output: string): string {
  const out = output.trimEnd()
  return `$ ${[command, ...args].join(' ')}${out === '' ? '' : `\n${out}`}`
}
