/**
 * summarizeCapacity against its first, plain version (kept here as the reference): the same rows,
 * in the same order, for any deployables and query, including the awkward keys (a null resource
 * class and an empty one, traits with commas or NUL characters, hosts that are prefixes of others).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  CAPACITY_GROUP_BY,
  deployableCapacity,
  summarizeCapacity,
  type CapacityDeployable,
  type CapacityGroupBy,
  type CapacityQuery,
  type CapacityRow,
} from './capacity.js'

/** The first version of summarizeCapacity: a JSON key per deployable, an array per comparison. */
function reference(deployables: readonly CapacityDeployable[], query: CapacityQuery = {}) {
  const { resourceClass, hostname, traits = [], groupBy, leaseCutoff } = query
  const rowOf = (d: CapacityDeployable, by: CapacityGroupBy | undefined): CapacityRow => {
    const row = {
      ...{ total: 0, used: 0, reserved: 0, fenced: 0, cleaning: 0, free: 0 },
      resourceClass: null,
      hostname: null,
      traits: null,
      deviceType: null,
    }
    switch (by) {
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
  const rows = new Map<string, CapacityRow>()
  for (const d of deployables) {
    if (resourceClass !== undefined && d.resourceClass !== resourceClass) continue
    if (hostname !== undefined && d.hostname !== hostname) continue
    if (!traits.every((t) => d.traits.includes(t))) continue
    const fresh = rowOf(d, groupBy)
    const key = JSON.stringify([
      fresh.resourceClass,
      fresh.hostname,
      fresh.traits,
      fresh.deviceType,
    ])
    const row = rows.get(key) ?? fresh
    rows.set(key, row)
    const counts = deployableCapacity(d, leaseCutoff)
    for (const k of ['total', 'used', 'reserved', 'fenced', 'cleaning', 'free'] as const)
      row[k] += counts[k]
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

const CUTOFF = '2026-11-25T06:01:00.000000+00:00'
const text = fc.constantFrom('', 'a', 'ab', 'a,b', 'b', 'a\0', 'a\0b', '\0', 'A', 'é')
const sortedUnique = (xs: string[]) => [...new Set(xs)].sort()
const deployable: fc.Arbitrary<CapacityDeployable> = fc.record({
  hostname: fc.constantFrom('h', 'h1', 'h10', 'h1\0', ''),
  deviceType: fc.constantFrom('GPU', 'FPGA', ''),
  resourceClass: fc.option(fc.constantFrom('', 'a', 'a\0', 'b'), { nil: null }),
  traits: fc.array(text, { maxLength: 2 }).map(sortedUnique),
  lifecycle: fc.constantFrom('active', 'inactive'),
  status: fc.constantFrom('enabled', 'maintaining'),
  health: fc.constantFrom('ok', 'degraded', 'failed', 'unknown'),
  removalPending: fc.boolean(),
  agentLastSeen: fc.constantFrom(null, '2026-11-25T06:00:00.000000+00:00', CUTOFF),
  handles: fc.integer({ min: -1, max: 4 }),
  used: fc.integer({ min: -1, max: 5 }),
})
/** `arb` one time in `1 + absent`, else undefined. */
const sometimes = <T>(arb: fc.Arbitrary<T>, absent: number) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary: arb, weight: 1 })
/** Each filter in one query of four; no grouping (the default) in one of two. */
const query: fc.Arbitrary<CapacityQuery> = fc
  .record({
    resourceClass: sometimes(text, 3),
    hostname: sometimes(fc.constantFrom('h', 'h1'), 3),
    traits: sometimes(fc.array(text, { maxLength: 2 }), 3),
    groupBy: sometimes(fc.constantFrom(...CAPACITY_GROUP_BY), 1),
  })
  .map((q) => {
    const out: CapacityQuery = { leaseCutoff: CUTOFF }
    for (const [k, v] of Object.entries(q)) if (v !== undefined) Object.assign(out, { [k]: v })
    return out
  })

void test('summarizeCapacity: the same rows in the same order as the reference', () => {
  fc.assert(
    fc.property(fc.array(deployable, { minLength: 10, maxLength: 60 }), query, (ds, q) => {
      assert.deepStrictEqual(summarizeCapacity(ds, q), reference(ds, q))
    }),
    { numRuns: 500 },
  )
})

void test('summarizeCapacity: null and empty resource classes, comma traits stay apart', () => {
  const base: CapacityDeployable = {
    hostname: 'h1',
    deviceType: 'GPU',
    resourceClass: null,
    traits: [],
    lifecycle: 'active',
    status: 'enabled',
    health: 'ok',
    removalPending: false,
    agentLastSeen: null,
    handles: 1,
    used: 0,
  }
  const ds: CapacityDeployable[] = [
    { ...base, resourceClass: '' },
    base,
    { ...base, traits: ['a,b'] },
    { ...base, traits: ['a', 'b'] },
    { ...base, traits: ['a', 'b'], handles: 2 },
    { ...base, traits: ['a', 'c'] },
  ]
  const rows = summarizeCapacity(ds)
  assert.deepEqual(
    rows.map((r) => [r.resourceClass, r.traits, r.total]),
    [
      ['', [], 1],
      [null, [], 1],
      [null, ['a,b'], 1],
      [null, ['a', 'b'], 3],
      [null, ['a', 'c'], 1],
    ],
  )
  assert.deepStrictEqual(rows, reference(ds))
  assert.deepEqual(
    summarizeCapacity(ds, { groupBy: 'resource_class' }).map((r) => [r.resourceClass, r.total]),
    [
      ['', 1],
      [null, 6],
    ],
  )
})
