/**
 * Device health as drivers read it (issue 15, docs/health.md): the findings of one or more probes
 * folded into one `ReportedHealth`, and the threshold options every driver parses the same way.
 *
 * Severity: ok < degraded (still offered) < unknown (a probe could not run: fenced) < failed
 * (fenced). The worst finding wins; the reasons of every finding at that level are kept, joined
 * by `; `, so an operator reads all of what is wrong at once.
 */
import type { DiscoveredDevice, ReportedHealth } from '../domain/inventory/inventory.js'
import { ConfigError } from '../domain/errors.js'

const SEVERITY: Record<ReportedHealth['state'], number> = {
  ok: 0,
  degraded: 1,
  unknown: 2,
  failed: 3,
}

/** The worst of the findings (undefined entries are ok); undefined when all are ok. */
export function worstHealth(
  findings: readonly (ReportedHealth | undefined)[],
): ReportedHealth | undefined {
  let worst: ReportedHealth['state'] = 'ok'
  for (const f of findings) if (f && SEVERITY[f.state] > SEVERITY[worst]) worst = f.state
  if (worst === 'ok') return undefined
  const reasons = findings.filter((f) => f?.state === worst && f.reason).map((f) => f!.reason!)
  return reasons.length > 0 ? { state: worst, reason: reasons.join('; ') } : { state: worst }
}

/** The most a reason may hold (the conductor refuses a longer one, and with it the whole report). */
export const MAX_REASON = 255

/** The device with `health` set when it is not ok (absent means ok, so healthy output is unchanged). */
export function withHealth(device: DiscoveredDevice, health: ReportedHealth | undefined) {
  if (health === undefined || health.state === 'ok') return device
  const { reason } = health
  if (reason === undefined || reason.length <= MAX_REASON) return { ...device, health }
  return { ...device, health: { ...health, reason: `${reason.slice(0, MAX_REASON - 1)}…` } }
}

/**
 * A non-negative integer threshold from a driver's string options; `0` turns the check off.
 * @throws ConfigError naming the driver and the option when it is not a non-negative integer
 */
export function thresholdOption(
  driver: string,
  options: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
): number {
  const raw: unknown = options[name]
  // Options come from JSON and config files: a number given as a number is taken as its text.
  const text = raw === undefined || raw === null ? '' : String(raw as string | number).trim()
  if (text === '') return fallback
  if (!/^\d{1,9}$/.test(text)) {
    throw new ConfigError(
      `${driver} driver option ${name}: must be a non-negative integer (0 turns the check off), got '${text}'`,
      { code: 'INVALID_DRIVER_OPTION', details: { driver, option: name } },
    )
  }
  return Number(text)
}

/**
 * One of a fixed set of words from a driver's string options.
 * @throws ConfigError naming the driver, the option and the accepted words
 */
export function choiceOption<T extends string>(
  driver: string,
  options: Readonly<Record<string, string | undefined>>,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const raw: unknown = options[name]
  const text = raw === undefined || raw === null ? '' : String(raw as string).trim()
  if (text === '') return fallback
  if (!(choices as readonly string[]).includes(text)) {
    throw new ConfigError(
      `${driver} driver option ${name}: must be one of ${choices.join(', ')}, got '${text}'`,
      { code: 'INVALID_DRIVER_OPTION', details: { driver, option: name } },
    )
  }
  return text as T
}

/** `n thing` / `n things`. */
export function counted(n: number, thing: string): string {
  return `${n} ${thing}${n === 1 ? '' : 's'}`
}
