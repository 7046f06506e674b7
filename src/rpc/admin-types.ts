/**
 * Shapes of the conductor's driver administration and on-demand discovery (ConductorRpc 1.4):
 * one outcome per agent host, so that one unreachable agent never fails the whole call.
 */
import type { AgentDriverInfo, DriverAdminState } from './agent-rpc.js'

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
