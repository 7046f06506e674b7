import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from './conductor.js'
import { testDialects, type TestDatabase } from '../../test/support/db.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { InvalidInputError, NotFoundError, UnavailableError } from '../domain/errors.js'
import type { DiscoveredDevice } from '../domain/inventory/inventory.js'
import { noopLogger } from '../domain/logger.js'

const device = (fn: string, name: string): DiscoveredDevice => ({
  type: 'GPU',
  vendor: '10de',
  model: '1eb8',
  stdBoardInfo: null,
  vendorBoardInfo: null,
  controlPath: { type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: fn } },
  deployables: [
    {
      name,
      numAccelerators: 1,
      driverName: 'nvidia-gpu',
      attributes: [{ key: 'rc', value: 'PGPU' }],
      attachHandles: [
        { type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: fn } },
      ],
    },
  ],
})

const report = (host: string, devices: DiscoveredDevice[]) => ({
  host,
  hash: inventoryHash(devices),
  devices,
  autoActivate: false,
})

/** Asserts an InvalidInputError naming `field`. */
const invalidField = (field: string) => (err: unknown) => {
  assert.ok(err instanceof InvalidInputError, String(err))
  assert.equal(err.details?.field, field)
  return true
}

void describe('conductor (sqlite)', () => {
  let handle: TestDatabase
  let conductor: Conductor
  const clock = { now: () => new Date('2024-05-01T10:00:00.000Z') }

  before(async () => {
    const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
    handle = await sqlite.create()
    conductor = createConductor(
      { db: handle, log: noopLogger, clock },
      { saveIntervalMs: 1, maxBatch: 8 },
    )
  })
  after(async () => {
    await conductor.stop()
    await handle.close()
  })

  void it('diffs reports, and skips the write when the hash is unchanged', async () => {
    const first = [device('0', 'h1_0000:3b:00.0'), device('1', 'h1_0000:3b:00.1')]
    assert.deepEqual(await conductor.reportInventory(report('h1', first)), {
      changed: true,
      added: 2,
      updated: 0,
      removed: 0,
      pending: 0,
    })
    const batches = conductor.stats().batches
    assert.equal((await conductor.reportInventory(report('h1', first))).changed, false)
    assert.equal(conductor.stats().batches, batches)
    const second = [device('1', 'h1_0000:3b:00.1')]
    assert.deepEqual(await conductor.reportInventory(report('h1', second)), {
      changed: true,
      added: 0,
      updated: 0,
      removed: 1,
      pending: 0,
    })
    const rows = await handle.db.selectFrom('devices').select(['hostname', 'created_at']).execute()
    assert.deepEqual(rows, [{ hostname: 'h1', created_at: '2024-05-01T10:00:00.000000+00:00' }])
  })

  void it('re-checks reports and names the field at fault', async () => {
    const good = report('h2', [device('0', 'h2_a')])
    await assert.rejects(
      conductor.reportInventory({ ...good, hash: 'f'.repeat(64) }),
      invalidField('hash'),
    )
    await assert.rejects(conductor.reportInventory({ ...good, host: '' }), invalidField('host'))
    const twice = [device('0', 'h2_a'), device('0', 'h2_b')]
    await assert.rejects(
      conductor.reportInventory(report('h2', twice)),
      invalidField('devices[1].controlPath'),
    )
    const sameName = [device('0', 'h2_a'), device('1', 'h2_a')]
    await assert.rejects(
      conductor.reportInventory(report('h2', sameName)),
      invalidField('devices[1].deployables[0].name'),
    )
    const badType = [{ ...device('0', 'h2_a'), type: 'TPU' }] as unknown as DiscoveredDevice[]
    await assert.rejects(
      conductor.reportInventory(report('h2', badType)),
      invalidField('devices[0].type'),
    )
    const badCount = [device('0', 'h2_a')]
    badCount[0]!.deployables[0]!.numAccelerators = -1
    await assert.rejects(
      conductor.reportInventory(report('h2', badCount)),
      invalidField('devices[0].deployables[0].numAccelerators'),
    )
  })

  void it('re-checks the other writes', async () => {
    const groups = [{ 'resources:PGPU': '1' }]
    await assert.rejects(
      conductor.createDeviceProfile({ name: '', description: null, groups }),
      invalidField('name'),
    )
    await assert.rejects(
      conductor.createDeviceProfile({ name: 'x', description: null, groups: [] }),
      invalidField('groups'),
    )
    await assert.rejects(
      conductor.createDeviceProfile({
        name: 'x',
        description: null,
        groups: [{ 'resources:PGPU': 1 as unknown as string }],
      }),
      invalidField('groups[0].resources:PGPU'),
    )
    await assert.rejects(
      conductor.createDeviceProfile({ name: 'x', description: null, groups, uuid: 'nope' }),
      invalidField('uuid'),
    )
    await assert.rejects(
      conductor.deleteDeviceProfiles({ uuids: ['nope'] }),
      invalidField('uuids[0]'),
    )
    await assert.rejects(
      conductor.createAttribute({ deployableId: 0, key: 'k', value: 'v' }),
      invalidField('deployableId'),
    )
    await assert.rejects(
      conductor.setDeviceStatus({ uuid: crypto.randomUUID(), status: 'broken' as 'enabled' }),
      invalidField('status'),
    )
    await assert.rejects(
      conductor.heartbeat({ host: 'h', binary: '', version: '1' }),
      invalidField('binary'),
    )
  })

  void it('creates and deletes profiles, attributes and device status', async () => {
    const uuid = crypto.randomUUID()
    const profile = await conductor.createDeviceProfile({
      uuid,
      name: 'gpu',
      description: null,
      groups: [{ 'resources:PGPU': '1' }],
    })
    assert.equal(profile.uuid, uuid)
    await conductor.deleteDeviceProfiles({ uuids: [uuid] })
    await assert.rejects(conductor.deleteDeviceProfiles({ uuids: [uuid] }), NotFoundError)

    const dep = await handle.db.selectFrom('deployables').select('id').executeTakeFirstOrThrow()
    const attr = await conductor.createAttribute({
      deployableId: dep.id,
      key: 'trait0',
      value: 'CUSTOM_X',
    })
    assert.equal(attr.key, 'trait0')
    await conductor.deleteAttribute({ uuid: attr.uuid })

    const dev = await handle.db.selectFrom('devices').select('uuid').executeTakeFirstOrThrow()
    assert.equal(
      (await conductor.setDeviceStatus({ uuid: dev.uuid, status: 'maintaining' })).status,
      'maintaining',
    )
    await conductor.heartbeat({ host: 'c1', binary: 'cyborg-conductor', version: '1' })
  })

  void it('refuses writes once stopped', async () => {
    const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
    const db = await sqlite.create()
    const c = createConductor({ db, log: noopLogger, clock }, { saveIntervalMs: 1, maxBatch: 8 })
    await c.stop()
    await assert.rejects(c.heartbeat({ host: 'h', binary: 'b', version: '1' }), UnavailableError)
    await db.close()
  })
})
