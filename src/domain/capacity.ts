/**
 * Capacity (`GET /v2/capacity`, docs/capacity.md): attach handles counted as units, each in exactly
 * one bucket, so `total = used + reserved + fenced + cleaning + free` for every row. A handle is
 * `used` when flagged in use or held by a request; of the rest, its deployable's device decides:
 * `fenced` when its health is failed or unknown or its host's agent is past its lease, `reserved`
 * when it is otherwise not offered (src/domain/inventory.ts's isOffered), else `free`. `cleaning`
 * is always 0 until the cleaning state exists. Pure: src/db/capacity.ts reads the facts.
 */
import { isFencedHealth } from './health-diff.js'
import { isOffered } from './inventory.js'

/** The groupings other than the default one row per (resource class, host, trait set). */
export const CAPACITY_GROUP_BY = ['host', 'resource_class', 'device_type'] as const
export type CapacityGroupBy = (typeof CAPACITY_GROUP_BY)[number]

/** One deployable as capacity reads it. */
export interface CapacityDeployable {
  hostname: string
  /** The device's type (GPU, FPGA, …). */
  deviceType: string
  /** The `rc` attribute, or null when the deployable has none. */
  resourceClass: string | null
  /** The values of its `trait*` attributes, sorted and without duplicates. */
  traits: string[]
  lifecycle: string
  status: string
  health: string
  removalPending: boolean
  /** The last beat of the host's agent, or null when none ever beat (the lease is not judged). */
  agentLastSeen: string | null
  /** Its attach handles. */
  handles: number
  /** Of those, the ones in use or held by an accelerator request. */
  used: number
}

export interface CapacityCounts {
  total: number
  used: number
  reserved: number
  fenced: number
  /** Always 0 for now: the cleaning state comes with a later issue. */
  cleaning: number
  free: number
}

/** One row: the counts of a group; the fields it is not grouped by are null. */
export interface CapacityRow extends CapacityCounts {
  resourceClass: string | null
  hostname: string | null
  traits: string[] | null
  deviceType: string | null
}

export interface CapacityQuery {
  resourceClass?: string
  hostname?: string
  /** Rows whose trait set includes every one of these. */
  traits?: readonly string[]
  groupBy?: CapacityGroupBy
  /** An agent whose last beat is before this is past its lease; undefined: leases are not judged. */
  leaseCutoff?: string
}

const zero = (): CapacityCounts => ({
  total: 0,
  used: 0,
  reserved: 0,
  fenced: 0,
  cleaning: 0,
  free: 0,
})

/** Whether the device is fenced: by its health, or because its host's agent is past its lease. */
export function isCapacityFenced(d: CapacityDeployable, leaseCutoff?: string): boolean {
  const last = d.agentLastSeen
  const silent = leaseCutoff !== undefined && last !== null && last < leaseCutoff
  return silent || isFencedHealth(d.health)
}

/** The units of one deployable, each in exactly one bucket. */
export function deployableCapacity(d: CapacityDeployable, leaseCutoff?: string): CapacityCounts {
  const total = Math.max(0, d.handles)
  const used = Math.min(Math.max(0, d.used), total)
  const rest = total - used
  const out = { ...zero(), total, used }
  if (isCapacityFenced(d, leaseCutoff)) out.fenced = rest
  else if (!isOffered(d)) out.reserved = rest
  else out.free = rest
  return out
}

function rowOf(d: CapacityDeployable, groupBy: CapacityGroupBy | undefined): CapacityRow {
  const row = { ...zero(), resourceClass: null, hostname: null, traits: null, deviceType: null }
  switch (groupBy) {
    case 'host':
      return { ...row, hostname: d.hostname }
    case 'resource_class':
      return { ...row, resourceClass: d.resourceClass }
    case 'device_type':
      return { ...row, deviceType: d.deviceType }
    case undefined:
      return { ...row, resourceClass: d.resourceClass, hostname: d.hostname, traits: d.traits }
  }
}

const keyOf = (r: CapacityRow): string =>
  JSON.stringify([r.resourceClass, r.hostname, r.traits, r.deviceType])

/** Filters the deployables, sums their units per group, and sorts the rows by their key. */
export function summarizeCapacity(
  deployables: readonly CapacityDeployable[],
  query: CapacityQuery = {},
): CapacityRow[] {
  const { resourceClass, hostname, traits = [], groupBy, leaseCutoff } = query
  const rows = new Map<string, CapacityRow>()
  for (const d of deployables) {
    if (resourceClass !== undefined && d.resourceClass !== resourceClass) continue
    if (hostname !== undefined && d.hostname !== hostname) continue
    if (!traits.every((t) => d.traits.includes(t))) continue
    const fresh = rowOf(d, groupBy)
    const key = keyOf(fresh)
    const row = rows.get(key) ?? fresh
    rows.set(key, row)
    const counts = deployableCapacity(d, leaseCutoff)
    row.total += counts.total
    row.used += counts.used
    row.reserved += counts.reserved
    row.fenced += counts.fenced
    row.cleaning += counts.cleaning
    row.free += counts.free
  }
  const sortKey = (r: CapacityRow) => [
    r.resourceClass ?? '',
    r.hostname ?? '',
    (r.traits ?? []).join(','),
    r.deviceType ?? '',
  ]
  return [...rows.values()].sort((a, b) => {
    const ka = sortKey(a)
    const kb = sortKey(b)
    for (let i = 0; i < ka.length; i++) {
      if (ka[i]! !== kb[i]!) return ka[i]! < kb[i]! ? -1 : 1
    }
    return 0
  })
}
