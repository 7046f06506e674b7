/**
 * The vendor half of a QAT PF's health (issue 15): the device state the in-kernel driver shows in
 * `/sys/bus/pci/devices/<pf>/qat/state` (Linux Documentation/ABI/testing/sysfs-driver-qat: `up`,
 * the device is up and running; `down`, the device is down). Only QAT GEN4+ PFs (4xxx, 401xx,
 * 402xx, 420xx) have the file; older generations (DH895xCC, C3xxx, C62x) do not, and then there is
 * no finding. VFs have no state of their own: a PF that is down serves none of its VFs, and the
 * finding is the device's (the PF's), which all its VF deployables share.
 *
 * - `up`: no finding;
 * - `down`: `failed` (`QAT device state down`);
 * - the file is there but cannot be read, or says something else: `unknown` (`QAT device state
 *   unreadable`, `QAT device state 'restarting' not understood`), so that a state this code does
 *   not know (a newer kernel's) is fenced rather than offered.
 */
import type { HostProbe } from '../driver.js'
import type { ReportedHealth } from '../../domain/inventory/inventory.js'
import { readOptional } from '../pci/pci-sysfs.js'

/** The state file of a PF directory. */
export const qatStatePath = (pfDir: string): string => `${pfDir}/qat/state`

/**
 * Judges the content of `qat/state` (pure): undefined when the file is absent (`undefined`) or
 * `up`; `null` is a file that is there but could not be read.
 */
export function judgeQatState(text: string | null | undefined): ReportedHealth | undefined {
  if (text === undefined) return undefined
  if (text === null) return { state: 'unknown', reason: 'QAT device state unreadable' }
  const state = text.trim().toLowerCase()
  if (state === 'up') return undefined
  if (state === 'down') return { state: 'failed', reason: 'QAT device state down' }
  const shown = text
    .trim()
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 32)
  return {
    state: 'unknown',
    reason: shown === '' ? 'QAT device state empty' : `QAT device state '${shown}' not understood`,
  }
}

/** Reads `qat/state`: its text, `null` if it is there but unreadable, undefined if absent. */
export async function readQatState(
  host: HostProbe,
  pfDir: string,
): Promise<string | null | undefined> {
  const path = qatStatePath(pfDir)
  const text = await readOptional(host, path)
  if (text !== undefined) return text
  return (await host.exists(path).catch(() => false)) ? null : undefined
}

/** Reads and judges the state of the PF whose directory is `pfDir`. */
export async function qatStateHealth(
  host: HostProbe,
  pfDir: string,
): Promise<ReportedHealth | undefined> {
  return judgeQatState(await readQatState(host, pfDir))
}
