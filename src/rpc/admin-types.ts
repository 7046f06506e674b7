/**
 * Shapes that both RPC contracts use, so that neither contract imports the other: the result of an
 * inventory report, an agent's driver state and listing (AgentRpc 1.4), and the conductor's driver
 * administration and on-demand discovery (ConductorRpc 1.4), with one outcome per agent host so
 * that one unreachable agent never fails the whole call. A leaf: it imports nothing.
 */

/** The conductor's answer to an inventory report (also what `discover` and a rediscovery return). */
export interface InventoryReportResult {
  /** False when the snapshot hash matched the last accepted one: nothing was written. */
  changed: boolean
  added: number
  updated: number
  removed: number
  /** Deployables missing from the report but kept (removal_pending) until nothing holds them. */
  pending: number
}

/** A driver's runtime state on one agent: the answer of `setDriverEnabled` and `updateDriverOptions`. */
export interface DriverAdminState {
  driver: string
  /** False when discovery skips it (its devices leave the next report). */
  enabled: boolean
  /** The options the running instance was built with: the configured ones, then the overrides. */
  options: Record<string, string>
  /** The runtime overrides only (what the agent's cache keeps). */
  overrides: Record<string, string>
  /** The rediscovery run after the change: the conductor's answer, or why it failed (the change stands). */
  report: { ok: true; result: InventoryReportResult } | { ok: false; code: string; message: string }
}

/** One configured driver of an agent, as `listDrivers` (1.4) answers. */
export interface AgentDriverInfo {
  /** The driver's name (`fake`, `nvidia-gpu`, …). */
  name: string
  /** OpenStack Cyborg's names for it (`fake_driver`), accepted wherever a driver is named. */
  aliases: string[]
  /** The driver's version: drivers ship with Cyborg, so the agent's package version. */
  version: string
  /** False when discovery skips it (uninstalled at runtime). */
  enabled: boolean
  /** Devices it found in its last discovery (0 when that failed, or when it did not run since it was enabled). */
  deviceCount: number
  /** Its last discovery since the agent started, or null when it has not run (disabled, or not yet). */
  lastDiscovery: { at: string; ok: boolean; error?: { code: string; message: string } } | null
}

/** How a host took part in a call. */
export type HostCallStatus =
  /** The agent answered and the action succeeded. */
  | 'ok'
  /** The agent answered with an error (its code and message are in `error`). */
  | 'failed'
  /** The agent did not answer within the bound (or the bus could not reach it). */
  | 'unreachable'
  /** The driver is not configured on that agent (only when no host was named). */
  | 'skipped'

/** A failure's code and message, as a host outcome carries it. */
export interface HostError {
  code: string
  message: string
}

/** One agent host's drivers (`listAgentDrivers`). */
export interface HostDrivers {
  hostname: string
  status: Exclude<HostCallStatus, 'skipped'>
  /** The agent's last heartbeat or report (services table). */
  lastSeen: string
  drivers: AgentDriverInfo[]
  error?: HostError
}

/** What an install, uninstall or option update did on one host. */
export interface DriverActionOutcome {
  hostname: string
  status: HostCallStatus
  /** The driver's state on that agent after the change (absent unless the agent answered it). */
  state?: DriverAdminState
  error?: HostError
}

/** A deployable as a discovery diff names it. */
export interface DiscoveredItem {
  /** The deployable's name (`<host>_<pci address>`). */
  name: string
  /** Its device's type (FPGA, GPU, …) and control path (`dddd:bb:dd.f`). */
  deviceType: string
  address: string
  /** For `changed`: what differs (`num_accelerators`, `attributes`, `attach_handles`, `removal_pending`, `device`). */
  fields?: string[]
}

/** What one host's discovery changed in the database (`discoverHosts`). */
export interface HostDiscovery {
  hostname: string
  status: Exclude<HostCallStatus, 'skipped'>
  /** Deployables by name: new, different, gone (or marked removal_pending, see `pending`). */
  added: DiscoveredItem[]
  changed: DiscoveredItem[]
  removed: DiscoveredItem[]
  /** The conductor's counts of the report (absent when the discovery failed). */
  report?: { changed: boolean; added: number; updated: number; removed: number; pending: number }
  error?: HostError
}
