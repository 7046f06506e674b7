/**
 * The Fleet page's data: what it reads (GET /v1/status, /v2/devices at 2.6, /v2/capacity
 * grouped by resource class) and the counts it draws, as pure functions.
 */
import { getJson } from '../api.js'

export interface Service {
  host: string
  binary: string
  state: 'up' | 'down'
  last_seen: string
  seconds_since_last_seen: number
}

export interface Device {
  uuid: string
  type: string
  hostname: string
  status?: string
  lifecycle?: string
  health?: string
  health_reason?: string | null
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
  /** The agent's lease: held while it beats within `down_after_seconds`. */
  state: 'up' | 'down'
  lastSeen: string
  devices: number
  unhealthy: number
}

export interface Fleet {
  hosts: Host[]
  devices: Device[]
  capacity: CapacityRow[]
  downAfterSeconds: number
}

/** The fleet, read from the API in parallel. */
export async function loadFleet(): Promise<Fleet> {
  const [status, devices, capacity] = await Promise.all([
    getJson<{ services: Service[]; down_after_seconds: number }>('/v1/status'),
    getJson<{ devices: Device[] }>('/v2/devices', 6),
    getJson<{ capacity: CapacityRow[] }>('/v2/capacity?group_by=resource_class', 6),
  ])
  return {
    hosts: hostsOf(status.services, devices.devices),
    devices: devices.devices,
    capacity: capacity.capacity,
    downAfterSeconds: status.down_after_seconds,
  }
}

/** One row per agent's host (and per host with devices but no agent row), sorted by name. */
export function hostsOf(services: Service[], devices: Device[]): Host[] {
  const hosts = new Map<string, Host>()
  for (const s of services.filter((x) => x.binary === 'cyborg-agent'))
    hosts.set(s.host, {
      host: s.host,
      state: s.state,
      lastSeen: s.last_seen,
      devices: 0,
      unhealthy: 0,
    })
  for (const d of devices) {
    const h = hosts.get(d.hostname) ?? {
      host: d.hostname,
      state: 'down',
      lastSeen: '',
      devices: 0,
      unhealthy: 0,
    }
    h.devices += 1
    if (d.health !== undefined && d.health !== 'ok') h.unhealthy += 1
    hosts.set(d.hostname, h)
  }
  return [...hosts.values()].sort((a, b) => a.host.localeCompare(b.host))
}

/** How many devices have each value of `key`, most first, then by name. */
export function countBy(
  devices: Device[],
  key: 'type' | 'lifecycle' | 'status' | 'health',
): [string, number][] {
  const counts = new Map<string, number>()
  for (const d of devices) {
    const v = d[key] ?? 'unknown'
    counts.set(v, (counts.get(v) ?? 0) + 1)
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
}

/** The buckets of a capacity bar, in the order docs/capacity.md defines them. */
export const BUCKETS = ['used', 'reserved', 'fenced', 'cleaning', 'free'] as const
