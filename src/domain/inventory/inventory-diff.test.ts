import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { InvalidInputError } from '../errors.js'
import { deployableRpUuid } from '../ids.js'
import { canonicalJson, type DiscoveredDevice } from './inventory.js'
import {
  diffInventory,
  MISSING_REASON,
  type CurrentDevice,
  type InventoryDiff,
} from './inventory-diff.js'
import { sampleDevice } from '../../../test/support/sample-inventory.js'
import { attributeUuid, pathKey, type KnownIdentity } from '../device-identity.js'

const HOST = 'h1'

/** Identities as the database holds them for `rows`: each under its control path. */
const knownOf = (rows: readonly CurrentDevice[]): KnownIdentity[] =>
  rows.map((r) => ({
    identityKey: pathKey(r.key),
    deviceUuid: r.uuid,
    lifecycle: 'active',
    lifecycleReason: null,
    status: 'enabled',
  }))
/** diffInventory over stored rows, with their identities remembered. */
const diffRows = (rows: CurrentDevice[], devices: DiscoveredDevice[]) =>
  diffInventory(HOST, rows, devices, 1, knownOf(rows))

/** Rows as the database would hold them after storing `devices`, numbered from `next`. */
function rowsFrom(devices: DiscoveredDevice[], next = { id: 1 }): CurrentDevice[] {
  return devices.map((d) => ({
    id: next.id,
    uuid: `device-${next.id++}`,
    key: canonicalJson(d.controlPath.info),
    type: d.type,
    vendor: d.vendor,
    model: d.model,
    stdBoardInfo: d.stdBoardInfo === null ? null : canonicalJson(d.stdBoardInfo),
    vendorBoardInfo: d.vendorBoardInfo === null ? null : canonicalJson(d.vendorBoardInfo),
    health: 'ok',
    lifecycleReason: null,
    deployables: d.deployables.map((dep) => ({
      id: next.id,
      uuid: `deployable-${next.id++}`,
      name: dep.name,
      numAccelerators: dep.numAccelerators,
      driverName: dep.driverName,
      rpUuid: deployableRpUuid(HOST, dep.name),
      inUse: false,
      inPlacement: false,
      removalPending: false,
      attributes: dep.attributes.map((a) => ({ id: next.id++, ...a })),
      handles: dep.attachHandles.map((h) => ({
        id: next.id++,
        type: h.type,
        info: canonicalJson(h.info),
        inUse: false,
      })),
    })),
  }))
}

/** What `applyInventoryDiff` does to the tables, done to in-memory rows. */
function applyInMemory(rows: CurrentDevice[], diff: InventoryDiff): CurrentDevice[] {
  const next = { id: 1_000_000 }
  const gone = new Set([
    ...diff.removeAttributes,
    ...diff.removeHandles,
    ...diff.removeDeployables,
    ...diff.removeDevices,
  ])
  const out = structuredClone(rows).filter((d) => !gone.has(d.id))
  for (const d of out) {
    d.deployables = d.deployables.filter((x) => !gone.has(x.id))
    for (const x of d.deployables) {
      x.attributes = x.attributes.filter((a) => !gone.has(a.id))
      x.handles = x.handles.filter((h) => !gone.has(h.id))
    }
  }
  const deps = () => out.flatMap((d) => d.deployables)
  for (const u of diff.updateDevices)
    Object.assign(
      out.find((d) => d.id === u.id)!,
      u.set,
    )
  for (const u of diff.updateDeployables)
    Object.assign(
      deps().find((d) => d.id === u.id)!,
      u.set,
    )
  for (const u of diff.updateAttributes)
    deps()
      .flatMap((d) => d.attributes)
      .find((a) => a.id === u.id)!.value = u.value
  for (const u of diff.updateHandles)
    deps()
      .flatMap((d) => d.handles)
      .find((h) => h.id === u.id)!.type = u.type
  for (const id of diff.markRemovalPending) deps().find((d) => d.id === id)!.removalPending = true
  for (const id of diff.clearRemovalPending) deps().find((d) => d.id === id)!.removalPending = false
  const newDep = (
    dep:
      | InventoryDiff['addDeployables'][number]
      | InventoryDiff['addDevices'][number]['deployables'][number],
  ) => ({
    id: next.id++,
    uuid: dep.uuid,
    name: dep.name,
    numAccelerators: dep.numAccelerators,
    driverName: dep.driverName,
    rpUuid: dep.rpUuid,
    inUse: false,
    inPlacement: false,
    removalPending: false,
    attributes: dep.attributes.map((a) => ({ id: next.id++, ...a })),
    handles: dep.handles.map((h) => ({ id: next.id++, ...h, inUse: false })),
  })
  for (const d of diff.addDevices) {
    out.push({
      id: next.id++,
      uuid: d.uuid,
      key: d.key,
      ...d.fields,
      health: 'ok',
      lifecycleReason: null,
      deployables: d.deployables.map(newDep),
    })
  }
  for (const d of diff.addDeployables)
    out.find((x) => x.id === d.deviceId)!.deployables.push(newDep(d))
  for (const a of diff.addAttributes)
    deps()
      .find((d) => d.id === a.deployableId)!
      .attributes.push({ id: next.id++, ...a })
  for (const h of diff.addHandles)
    deps()
      .find((d) => d.id === h.deployableId)!
      .handles.push({ id: next.id++, ...h, inUse: false })
  return out
}

/** Everything but ids and in-use flags, in key order. */
function content(rows: CurrentDevice[]) {
  return rows
    .map(({ id: _id, uuid: _u, deployables, health: _h, lifecycleReason: _r, ...fields }) => ({
      ...fields,
      deployables: deployables
        .map((d) => ({
          name: d.name,
          n: d.numAccelerators,
          driver: d.driverName,
          rp: d.rpUuid,
          attributes: d.attributes.map((a) => `${a.key}=${a.value}`).sort(),
          handles: d.handles.map((h) => `${h.info}:${h.type}`).sort(),
        }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    }))
    .sort((a, b) => a.key.localeCompare(b.key))
}

const writes = (diff: InventoryDiff) =>
  Object.values(diff).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0)

await test('diff: first report adds everything, the same report again writes nothing', () => {
  const devices = [sampleDevice(HOST, 0), sampleDevice(HOST, 1)]
  const first = diffRows([], devices)
  assert.deepEqual(first.counts, { added: 2, updated: 0, removed: 0, pending: 0 })
  assert.equal(
    first.addDevices[0]!.deployables[0]!.rpUuid,
    deployableRpUuid(HOST, devices[0]!.deployables[0]!.name),
  )
  const again = diffRows(rowsFrom(devices), devices)
  assert.equal(writes(again), 0)
  assert.deepEqual(again.counts, { added: 0, updated: 0, removed: 0, pending: 0 })
})

await test('diff: changes land in the right lists, removals list children first', () => {
  const before = [sampleDevice(HOST, 0), sampleDevice(HOST, 1)]
  const rows = rowsFrom(before)
  const after = structuredClone(before).slice(0, 1)
  const dep = after[0]!.deployables[0]!
  dep.numAccelerators = 8
  dep.attributes = [
    { key: 'rc', value: 'VGPU' },
    { key: 'trait9', value: 'CUSTOM_NEW' },
  ]
  dep.attachHandles[0]!.type = 'MDEV'
  const diff = diffRows(rows, after)
  const d0 = rows[0]!.deployables[0]!
  assert.deepEqual(diff.updateDeployables, [{ id: d0.id, set: { numAccelerators: 8 } }])
  assert.deepEqual(diff.updateAttributes, [{ id: d0.attributes[0]!.id, value: 'VGPU' }])
  assert.deepEqual(diff.addAttributes, [
    {
      deployableId: d0.id,
      key: 'trait9',
      value: 'CUSTOM_NEW',
      uuid: attributeUuid(d0.uuid, 'trait9'),
    },
  ])
  assert.deepEqual(diff.updateHandles, [{ id: d0.handles[0]!.id, type: 'MDEV' }])
  const d1 = rows[1]!.deployables[0]!
  assert.deepEqual(diff.removeAttributes, [d0.attributes[1]!.id, ...d1.attributes.map((a) => a.id)])
  assert.deepEqual(
    diff.removeHandles,
    d1.handles.map((h) => h.id),
  )
  assert.deepEqual(diff.removeDeployables, [d1.id])
  assert.deepEqual(diff.removeDevices, [rows[1]!.id])
  assert.deepEqual(diff.counts, { added: 0, updated: 1, removed: 1, pending: 0 })
})

await test('diff: in-use things are kept and their device marked failed', () => {
  const before = [sampleDevice(HOST, 0), sampleDevice(HOST, 1)]
  const rows = rowsFrom(before)
  rows[0]!.deployables[0]!.inUse = true // named by an ARQ
  const diff = diffRows(rows, [])
  assert.deepEqual(diff.removeDevices, [rows[1]!.id])
  assert.deepEqual(diff.updateDevices, [
    {
      id: rows[0]!.id,
      set: { health: 'failed', healthReason: MISSING_REASON, lifecycleReason: MISSING_REASON },
    },
  ])
  assert.deepEqual(diff.healthChanges, [
    { deviceId: rows[0]!.id, from: 'ok', to: 'failed', reason: MISSING_REASON },
  ])
  assert.deepEqual(diff.markRemovalPending, [rows[0]!.deployables[0]!.id])
  assert.deepEqual(diff.counts, { added: 0, updated: 1, removed: 1, pending: 1 })
  // Already marked: nothing to write. Back in the report: healthy again, no longer pending.
  Object.assign(rows[0]!, {
    health: 'failed',
    healthReason: MISSING_REASON,
    lifecycleReason: MISSING_REASON,
  })
  rows[0]!.deployables[0]!.removalPending = true
  assert.equal(writes(diffRows(rows.slice(0, 1), [])), 0)
  const back = diffRows(rows.slice(0, 1), before.slice(0, 1))
  assert.deepEqual(back.updateDevices, [
    { id: rows[0]!.id, set: { health: 'ok', healthReason: null, lifecycleReason: null } },
  ])
  assert.deepEqual(back.healthChanges, [
    { deviceId: rows[0]!.id, from: 'failed', to: 'ok', reason: null },
  ])
  assert.deepEqual(back.clearRemovalPending, [rows[0]!.deployables[0]!.id])
})

await test('diff: a vanished deployable with a Placement provider waits for the provider to go', () => {
  const before = [sampleDevice(HOST, 0)]
  const rows = rowsFrom(before)
  const dep = rows[0]!.deployables[0]!
  dep.inPlacement = true
  const diff = diffRows(rows, [])
  assert.deepEqual(diff.removeDevices, [])
  assert.deepEqual(diff.removeDeployables, [])
  assert.deepEqual(diff.markRemovalPending, [dep.id])
  assert.equal(diff.counts.pending, 1)
  // Once the conductor has deleted the provider (placement_hash cleared), the rows go.
  dep.inPlacement = false
  dep.removalPending = true
  const freed = diffRows(rows, [])
  assert.deepEqual(freed.removeDevices, [rows[0]!.id])
  assert.equal(freed.counts.pending, 0)
})

await test('diff: a snapshot that repeats a key is refused', () => {
  const d = sampleDevice(HOST, 0)
  assert.throws(() => diffRows([], [d, structuredClone(d)]), InvalidInputError)
  const twice = structuredClone(d)
  twice.deployables[0]!.attributes.push({ key: 'rc', value: 'X' })
  assert.throws(() => diffRows([], [twice]), InvalidInputError)
})

// Small key spaces, so that A and B overlap often.
const deviceArb = (bus: number) =>
  fc
    .record({
      type: fc.constantFrom('GPU', 'FPGA') as fc.Arbitrary<DiscoveredDevice['type']>,
      vendor: fc.constantFrom('10de', '8086'),
      board: fc.constantFrom(null, { class: '0302' }),
      deps: fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { maxLength: 3 }),
      n: fc.integer({ min: 1, max: 3 }),
      attrs: fc.uniqueArray(
        fc.tuple(fc.constantFrom('rc', 'trait0', 'trait1'), fc.constantFrom('A', 'B')),
        {
          selector: (t) => t[0],
          maxLength: 3,
        },
      ),
      handles: fc.uniqueArray(
        fc.tuple(fc.integer({ min: 0, max: 3 }), fc.constantFrom('PCI', 'MDEV')),
        {
          selector: (t) => t[0],
          maxLength: 3,
        },
      ),
    })
    .map((r): DiscoveredDevice => ({
      type: r.type,
      vendor: r.vendor,
      model: 'm',
      stdBoardInfo: r.board,
      vendorBoardInfo: null,
      controlPath: {
        type: 'PCI',
        info: { domain: '0000', bus: String(bus), device: '00', function: '0' },
      },
      deployables: r.deps.map((k) => ({
        name: `${HOST}_${bus}_${k}`,
        numAccelerators: r.n,
        driverName: 'drv',
        attributes: r.attrs.map(([key, value]) => ({ key, value })),
        attachHandles: r.handles.map(([fn, type]) => ({
          type: type as 'PCI' | 'MDEV',
          info: { bus: String(bus), function: String(fn) },
        })),
      })),
    }))
const snapshotArb = fc
  .uniqueArray(fc.integer({ min: 0, max: 4 }), { maxLength: 4 })
  .chain((buses) => fc.tuple(...buses.map(deviceArb)))

await test('property: applying diff(A→B) to A yields B, and then the diff is empty', () => {
  fc.assert(
    fc.property(snapshotArb, snapshotArb, (a, b) => {
      const applied = applyInMemory(rowsFrom(a), diffRows(rowsFrom(a), b))
      assert.deepEqual(content(applied), content(rowsFrom(b)))
      const again = diffRows(applied, b)
      assert.equal(writes(again), 0)
    }),
  )
})

await test('property: in-use handles survive any report, and B is still fully present', () => {
  fc.assert(
    fc.property(snapshotArb, snapshotArb, fc.array(fc.nat()), (a, b, picks) => {
      const rows = rowsFrom(a)
      const handles = rows.flatMap((d) => d.deployables.flatMap((x) => x.handles))
      for (const p of picks) if (handles.length > 0) handles[p % handles.length]!.inUse = true
      const used = handles.filter((h) => h.inUse).map((h) => h.id)
      const applied = applyInMemory(rows, diffRows(rows, b))
      const ids = new Set(
        applied.flatMap((d) => d.deployables.flatMap((x) => x.handles.map((h) => h.id))),
      )
      for (const id of used) assert.ok(ids.has(id), `in-use handle ${id} was removed`)
      const keys = new Set(applied.map((d) => d.key))
      for (const d of rowsFrom(b)) assert.ok(keys.has(d.key))
    }),
  )
})

test('diff: the health a driver reports is the device health, with its reason', () => {
  const device = sampleDevice(HOST, 0)
  const [row] = rowsFrom([device])
  const failed = {
    ...device,
    health: { state: 'failed' as const, reason: '2 uncorrectable ECC errors' },
  }
  assert.deepEqual(diffRows([row!], [failed]).updateDevices, [
    { id: row!.id, set: { health: 'failed', healthReason: '2 uncorrectable ECC errors' } },
  ])
  // Reported again: nothing to write. Healthy again: ok, reason cleared.
  Object.assign(row!, { health: 'failed', healthReason: '2 uncorrectable ECC errors' })
  assert.deepEqual(diffRows([row!], [failed]).updateDevices, [])
  assert.deepEqual(diffRows([row!], [device]).updateDevices, [
    { id: row!.id, set: { health: 'ok', healthReason: null } },
  ])
  // The lease fence (unknown, set by the conductor) is lifted by the next report.
  Object.assign(row!, { health: 'unknown', healthReason: 'agent cyborg-agent@h1 silent since x' })
  assert.deepEqual(diffRows([row!], [device]).updateDevices, [
    { id: row!.id, set: { health: 'ok', healthReason: null } },
  ])
})
