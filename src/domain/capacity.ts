/**
 * Capacity (`GET /v2/capacity`, docs/capacity.md): attach handles counted as units, each in exactly
 * one bucket, so `total = used + reserved + fenced + cleaning + free` for every row. A handle is
 * `used` when flagged in use or held by a request, `cleaning` when released and not yet cleaned
 * (a pending or failed clean, docs/cleaning.md); of the rest, its deployable's device decides:
 * `fenced` when its health is failed or unknown or its host's agent is past its lease, `reserved`
 * when it is otherwise not offered (src/domain/inventory/inventory.ts's isOffered), else `free`. Pure:
 * src/db/reads/capacity.ts reads the facts.
 */
import { isFencedHealth } from './health/report.js'
import { isOffered } from './inventory/inventory.js'

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
  /** Of the others, the ones out of service for their clean. @default 0 */
  cleaning?: number
}

export interface CapacityCounts {
  total: number
  used: number
  reserved: number
  fenced: number
  /** Released and not yet cleaned (a pending or a failed clean). */
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

/** Adds the units of `d` to `into`, each in exactly one bucket. */
function addUnits(into: CapacityCounts, d: CapacityDeployable, leaseCutoff?: string): void {
  const total = Math.max(0, d.handles)
  const used = Math.min(Math.max(0, d.used), total)
  const cleaning = Math.min(Math.max(0, d.cleaning ?? 0), total - used)
  const rest = total - used - cleaning
  into.total += total
  into.used += used
  into.cleaning += cleaning
  if (isCapacityFenced(d, leaseCutoff)) into.fenced += rest
  else if (!isOffered(d)) into.reserved += rest
  else into.free += rest
}

/** The units of one deployable, each in exactly one bucket. */
export function deployableCapacity(d: CapacityDeployable, leaseCutoff?: string): CapacityCounts {
  const out = zero()
  addUnits(out, d, leaseCutoff)
  return out
}

/** A row of a group, its counts at zero; the fields it is not grouped by are null. */
function rowOf(d: CapacityDeployable, groupBy: CapacityGroupBy | undefined): CapacityRow {
  const grouped = (by: CapacityGroupBy) => groupBy === undefined || groupBy === by
  return {
    ...zero(),
    resourceClass: grouped('resource_class') ? d.resourceClass : null,
    hostname: grouped('host') ? d.hostname : null,
    traits: groupBy === undefined ? d.traits : null,
    deviceType: groupBy === 'device_type' ? d.deviceType : null,
  }
}

/** Whether two trait lists are the same, in the same order. */
function sameTraits(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The rows of one summary, one per distinct (resource class, host, trait set, device type): by
 * the one field grouped by, or, by default, by host and then among that host's few rows by
 * resource class and trait set. Rows come out in the order their groups were first seen.
 */
class Groups {
  private readonly byField = new Map<string | null, CapacityRow>()
  private readonly byHost = new Map<string, CapacityRow[]>()
  readonly rows: CapacityRow[] = []

  constructor(private readonly groupBy: CapacityGroupBy | undefined) {}

  rowOf(d: CapacityDeployable): CapacityRow {
    const { groupBy } = this
    if (groupBy !== undefined) {
      const key =
        groupBy === 'host' ? d.hostname : groupBy === 'device_type' ? d.deviceType : d.resourceClass
      let row = this.byField.get(key)
      if (row === undefined) {
        row = this.add(d)
        this.byField.set(key, row)
      }
      return row
    }
    let rows = this.byHost.get(d.hostname)
    if (rows === undefined) {
      rows = []
      this.byHost.set(d.hostname, rows)
    }
    for (const row of rows) {
      if (row.resourceClass === d.resourceClass && sameTraits(row.traits!, d.traits)) return row
    }
    const row = this.add(d)
    rows.push(row)
    return row
  }

  private add(d: CapacityDeployable): CapacityRow {
    const row = rowOf(d, this.groupBy)
    this.rows.push(row)
    return row
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Filters the deployables, sums their units per group, and sorts the rows by their key. */
export function summarizeCapacity(
  deployables: readonly CapacityDeployable[],
  query: CapacityQuery = {},
): CapacityRow[] {
  const { resourceClass, hostname, traits = [], groupBy, leaseCutoff } = query
  const groups = new Groups(groupBy)
  for (const d of deployables) {
    if (resourceClass !== undefined && d.resourceClass !== resourceClass) continue
    if (hostname !== undefined && d.hostname !== hostname) continue
    if (traits.length > 0 && !traits.every((t) => d.traits.includes(t))) continue
    addUnits(groups.rowOf(d), d, leaseCutoff)
  }
  // Sorted by (resource class, host, traits joined by commas, device type), a missing one as '';
  // each row's key is made once, and rows with equal keys keep their first-seen order.
  const keyed = groups.rows.map((row) => ({
    row,
    rc: row.resourceClass ?? '',
    host: row.hostname ?? '',
    traits: (row.traits ?? []).join(','),
    type: row.deviceType ?? '',
  }))
  keyed.sort(
    (a, b) =>
      compare(a.rc, b.rc) ||
      compare(a.host, b.host) ||
      compare(a.traits, b.traits) ||
      compare(a.type, b.type),
  )
  return keyed.map((k) => k.row)
}
