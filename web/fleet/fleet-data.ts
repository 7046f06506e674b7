/**
 * The Fleet page's data: what it reads (`GET /v2/devices/summary` at 2.10, `GET /v1/status`,
 * `GET /v2/capacity` grouped by resource class at 2.6) and the rows it draws, as pure functions.
 * The summary is a few grouped counts whatever the fleet's size, so 1,000 hosts × 8 devices cost
 * kilobytes, not every device. `/v1/status` is `cyborg:status:get` (admins and project managers by
 * default): when policy refuses it, the hosts still come from the summary, without their lease.
 */
import { ApiCallError, getJson } from '../api.js'

export interface Service {
  host: string
  binary: string
  state: 'up' | 'down'
  last_seen: string
  seconds_since_last_seen: number
}

export interface UnhealthyDevice {
  uuid: string
  hostname: string
  type: string
  health: string
  health_reason: string | null
  health_updated_at: string | null
  /** health_updated_at, or when the device was first recorded if its health never changed. */
  health_since: string
}

export interface DeviceSummary {
  total: number
  by_type: Record<string, number>
  by_lifecycle: Record<string, number>
  by_status: Record<string, number>
  by_health: Record<string, number>
  hosts: { hostname: string; devices: number; unhealthy: number }[]
  unhealthy: { total: number; devices: UnhealthyDevice[] }
}

export interface CapacityRow {
  resource_class: string | null
  total: number
  used: number
  reserved: number
  fenced: number
  cleaning: number
  free: number
}

export interface Host {
  host: string
  /** The agent's lease: held while it beats within `down_after_seconds`; hidden when refused. */
  lease: 'held' | 'expired' | 'hidden'
  lastSeen: string
  devices: number
  unhealthy: number
}

export interface Fleet {
  hosts: Host[]
  summary: DeviceSummary
  capacity: CapacityRow[]
  /** The lease's length in s; null when `/v1/status` was refused. */
  downAfterSeconds: number | null
}

/** The policy rule of `GET /v1/status`, named where its refusal is shown. */
export const STATUS_RULE = 'cyborg:status:get'

/** `/v1/status`, or null when policy refuses it (403): the page shows the hosts without leases. */
async function readStatus(): Promise<{ services: Service[]; down_after_seconds: number } | null> {
  try {
    return await getJson('/v1/status')
  } catch (e) {
    if (e instanceof ApiCallError && e.status === 403) return null
    throw e
  }
}

/** The fleet, read from the API in parallel. */
export async function loadFleet(): Promise<Fleet> {
  const [summary, status, capacity] = await Promise.all([
    getJson<DeviceSummary>('/v2/devices/summary', 10),
    readStatus(),
    getJson<{ capacity: CapacityRow[] }>('/v2/capacity?group_by=resource_class', 6),
  ])
  return {
    hosts: hostsOf(summary.hosts, status?.services ?? null),
    summary,
    capacity: capacity.capacity,
    downAfterSeconds: status?.down_after_seconds ?? null,
  }
}

/**
 * One row per agent's host and per host with devices; `services` null (refused) leaves every
 * lease hidden. Hosts with a problem come first (see {@link byProblem}).
 */
export function hostsOf(counts: DeviceSummary['hosts'], services: Service[] | null): Host[] {
  const hosts = new Map<string, Host>()
  for (const s of services ?? [])
    if (s.binary === 'cyborg-agent')
      hosts.set(s.host, {
        host: s.host,
        lease: s.state === 'up' ? 'held' : 'expired',
        lastSeen: s.last_seen,
        devices: 0,
        unhealthy: 0,
      })
  for (const c of counts) {
    const h = hosts.get(c.hostname) ?? {
      host: c.hostname,
      lease: services === null ? 'hidden' : 'expired',
      lastSeen: '',
      devices: 0,
      unhealthy: 0,
    }
    h.devices = c.devices
    h.unhealthy = c.unhealthy
    hosts.set(c.hostname, h)
  }
  return [...hosts.values()].sort(byProblem)
}

/** Whether a host needs a look: its lease expired or a device is not ok. */
export const hasProblem = (h: Host): boolean => h.lease === 'expired' || h.unhealthy > 0

/** Expired leases first, then the most unhealthy devices, then by name. */
export function byProblem(a: Host, b: Host): number {
  const expired = Number(b.lease === 'expired') - Number(a.lease === 'expired')
  return expired || b.unhealthy - a.unhealthy || a.host.localeCompare(b.host)
}

/** How many host rows the page draws until "Show all". */
export const HOST_ROWS = 50

/** The rows to draw: those whose name contains `filter`, the first {@link HOST_ROWS} unless `all`. */
export function visibleHosts(
  hosts: Host[],
  filter: string,
  all: boolean,
): { rows: Host[]; matching: number } {
  const f = filter.trim().toLowerCase()
  const matching = f === '' ? hosts : hosts.filter((h) => h.host.toLowerCase().includes(f))
  return { rows: all ? matching : matching.slice(0, HOST_ROWS), matching: matching.length }
}

/** A count map's entries, most first, then by name. */
export function countsOf(counts: Record<string, number>): [string, number][] {
  return Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
}

/** The buckets of a capacity bar, in the order docs/capacity.md defines them. */
export const BUCKETS = ['used', 'reserved', 'fenced', 'cleaning', 'free'] as const
