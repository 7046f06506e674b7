/**
 * The vendor half of an NVMe SSD's health (issue 15): the controller's SMART / Health Information
 * log (NVMe Base Specification, Log Identifier 02h) as nvme-cli prints it with
 * `nvme smart-log /dev/nvme<N> -o json`.
 *
 * Fields read, as nvme-cli names them (nvme-print-json.c, `json_smart_log`):
 *
 * - `critical_warning`: the bit field, printed as a number, or (verbose output, some 2.x builds by
 *   default) as an object `{value, available_spare, temp_threshold, reliability_degraded, ro,
 *   vmbu_failed, pmr_ro}`;
 * - `media_errors`: unrecovered data integrity errors over the drive's life (a raw number; nvme-cli
 *   1.x printed it as a float such as `3.0`);
 * - `percent_used`: the vendor's estimate of the endurance used, may exceed 100 (smartmontools and
 *   some builds call it `percentage_used`; both are accepted).
 *
 * Rules: the critical warning bits for spare below threshold (0), reliability degraded (2),
 * read-only (3), volatile memory backup failed (4) and persistent memory region read-only (5) make
 * the drive `failed`; the temperature bit (1) makes it `degraded`. Media errors and wear are
 * threshold options (docs/drivers.md, `nvme-ssd`); `0` turns a check off.
 */
import type { HostProbe } from '../driver.js'
import type { ReportedHealth } from '../../domain/inventory/inventory.js'
import { choiceOption, counted, thresholdOption, worstHealth } from '../health.js'
import { rawErrorMessage } from '../../domain/error-message.js'

/** How long one `nvme smart-log` may take before the controller is `unknown`. */
export const NVME_SMART_LOG_TIMEOUT_MS = 10_000

/** The part of a smart-log that health is judged on. */
export interface NvmeSmartLog {
  /** The critical warning byte. */
  criticalWarning: number
  mediaErrors?: number
  /** Percentage of rated endurance used. */
  percentageUsed?: number
}

/** The NVMe thresholds of the driver's options. */
export interface NvmeHealthThresholds {
  /** Run `nvme smart-log` at all. @default true */
  smartLog: boolean
  /** Media errors at which the drive is `degraded`. @default 1 */
  mediaErrorsDegraded: number
  /** Endurance used (percent) at which the drive is `degraded`. @default 90 */
  percentageUsedDegraded: number
  /** Endurance used (percent) at which the drive is `failed`. @default 0 (off: a worn drive still works) */
  percentageUsedFailed: number
}

/** The option names, as operators set them (`[nvme_ssd] media_errors_degraded = 1`). */
export const NVME_HEALTH_OPTIONS = [
  'smart_log',
  'media_errors_degraded',
  'percentage_used_degraded',
  'percentage_used_failed',
] as const

/** The NVMe health options of the `nvme-ssd` driver (strings, from config). */
export interface NvmeHealthOptions {
  /** `true`: run `nvme smart-log` when nvme-cli is installed; `false`: never. @default 'true' */
  smart_log?: string
  /** Media errors at which the drive is `degraded`; `0` = off. @default '1' */
  media_errors_degraded?: string
  /** Endurance used (percent) at which the drive is `degraded`; `0` = off. @default '90' */
  percentage_used_degraded?: string
  /** Endurance used (percent) at which the drive is `failed`; `0` = off. @default '0' */
  percentage_used_failed?: string
}

/**
 * The NVMe thresholds from the driver's options.
 * @throws ConfigError naming the driver and the option
 */
export function nvmeHealthThresholds(
  driver: string,
  given: Readonly<NvmeHealthOptions>,
): NvmeHealthThresholds {
  const options = given as Readonly<Record<string, string | undefined>>
  return {
    smartLog: choiceOption(driver, options, 'smart_log', ['true', 'false'], 'true') === 'true',
    mediaErrorsDegraded: thresholdOption(driver, options, 'media_errors_degraded', 1),
    percentageUsedDegraded: thresholdOption(driver, options, 'percentage_used_degraded', 90),
    percentageUsedFailed: thresholdOption(driver, options, 'percentage_used_failed', 0),
  }
}

/** A non-negative count as nvme-cli prints it: a number (`3`, `3.0`) or a numeric string. */
function count(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  if (typeof value === 'string' && /^\s*\d+(?:\.\d+)?\s*$/.test(value)) return Number(value)
  return undefined
}

/** The flags of the object form of `critical_warning`, by bit. */
const WARNING_FLAGS = [
  'available_spare',
  'temp_threshold',
  'reliability_degraded',
  'ro',
  'vmbu_failed',
  'pmr_ro',
] as const

/** `critical_warning` as a byte: a number, a `0x` string, or the object form. */
function criticalWarning(value: unknown): number | undefined {
  if (typeof value === 'string' && /^\s*0x[0-9a-f]{1,2}\s*$/i.test(value))
    return parseInt(value, 16)
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>
    const whole = count(o.value)
    if (whole !== undefined) return Number.isInteger(whole) && whole <= 255 ? whole : undefined
    let bits = 0
    let seen = false
    WARNING_FLAGS.forEach((flag, bit) => {
      const v = count(o[flag])
      if (v === undefined) return
      seen = true
      if (v > 0) bits |= 1 << bit
    })
    return seen ? bits : undefined
  }
  const n = count(value)
  return n !== undefined && Number.isInteger(n) && n <= 255 ? n : undefined
}

/** A JSON object from command output; undefined for anything else (garbage, an array, truncated). */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return undefined
  return json as Record<string, unknown>
}

/**
 * Parses `nvme smart-log -o json` output (pure); undefined when it is not a JSON object with a
 * readable `critical_warning` (truncated output, an error text, another command's output).
 */
export function parseNvmeSmartLog(text: string): NvmeSmartLog | undefined {
  const o = parseJsonObject(text)
  if (o === undefined) return undefined
  const warning = criticalWarning(o.critical_warning)
  if (warning === undefined) return undefined
  const log: NvmeSmartLog = { criticalWarning: warning }
  const media = count(o.media_errors)
  if (media !== undefined) log.mediaErrors = media
  const used = count(o.percent_used ?? o.percentage_used)
  if (used !== undefined) log.percentageUsed = used
  return log
}

/**
 * The critical warning bits: what each means (short: every reason fits `health_reason`, 255
 * characters, with the PCIe reasons beside it) and the state it gives.
 */
export const CRITICAL_WARNING_BITS: readonly {
  bit: number
  text: string
  state: 'failed' | 'degraded'
}[] = [
  { bit: 0, text: 'spare below threshold', state: 'failed' },
  { bit: 1, text: 'temperature outside threshold', state: 'degraded' },
  { bit: 2, text: 'reliability degraded', state: 'failed' },
  { bit: 3, text: 'read-only', state: 'failed' },
  { bit: 4, text: 'volatile memory backup failed', state: 'failed' },
  { bit: 5, text: 'PMR read-only', state: 'failed' },
]

/** Judges a smart-log (pure); undefined when healthy. Bits 6 and 7 are reserved and ignored. */
export function judgeNvmeSmartLog(
  log: NvmeSmartLog,
  t: NvmeHealthThresholds,
): ReportedHealth | undefined {
  const findings: ReportedHealth[] = []
  for (const state of ['failed', 'degraded'] as const) {
    const set = CRITICAL_WARNING_BITS.filter(
      (b) => b.state === state && (log.criticalWarning & (1 << b.bit)) !== 0,
    )
    if (set.length > 0)
      findings.push({
        state,
        reason: `NVMe critical warning: ${set.map((b) => `${b.text} (bit ${b.bit})`).join(', ')}`,
      })
  }
  const over = (n: number | undefined, limit: number) => limit > 0 && n !== undefined && n >= limit
  if (over(log.mediaErrors, t.mediaErrorsDegraded))
    findings.push({ state: 'degraded', reason: counted(log.mediaErrors!, 'media error') })
  const wear = `${log.percentageUsed}% of rated endurance used`
  if (over(log.percentageUsed, t.percentageUsedFailed))
    findings.push({ state: 'failed', reason: wear })
  else if (over(log.percentageUsed, t.percentageUsedDegraded))
    findings.push({ state: 'degraded', reason: wear })
  return worstHealth(findings)
}

/** An error's message on one line, at most `max` characters. */
function shortMessage(err: unknown, max = 160): string {
  const text = rawErrorMessage(err).replace(/\s+/g, ' ').trim()
  return text.length > max ? `${text.slice(0, max - 1)}…` : text || 'no message'
}

/**
 * Runs `nvme smart-log /dev/<controller> -o json` and judges it. No nvme-cli on the host
 * (COMMAND_NOT_FOUND) is no finding; nvme-cli failing (permission, timeout, an error exit) or
 * printing something that is not a smart-log is `unknown`.
 */
export async function nvmeSmartLogHealth(
  host: HostProbe,
  controller: string,
  t: NvmeHealthThresholds,
): Promise<ReportedHealth | undefined> {
  if (!t.smartLog) return undefined
  let out: string
  try {
    out = await host.exec('nvme', ['smart-log', `/dev/${controller}`, '-o', 'json'], {
      timeoutMs: NVME_SMART_LOG_TIMEOUT_MS,
    })
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code === 'COMMAND_NOT_FOUND') return undefined
    return { state: 'unknown', reason: `nvme smart-log failed: ${shortMessage(err)}` }
  }
  const log = parseNvmeSmartLog(out)
  if (log === undefined)
    return {
      state: 'unknown',
      reason: 'nvme smart-log failed: unreadable output (no critical_warning)',
    }
  return judgeNvmeSmartLog(log, t)
}
