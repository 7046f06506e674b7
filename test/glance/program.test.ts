/**
 * Programming a deployable by an operator (`programDeployable`, docs/fpga.md), with images from a
 * real Glance and the providers in a real Placement, the agent's discovery period at an hour: the
 * new function trait is in Placement when the call answers; the units are reserved while the card
 * is flashed; the custody record and event say who and which image; 409 while a unit is allocated
 * or cleaning; an image refused before the card changes nothing; a failure on the card forgets
 * the image and records it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { noopLogger } from '../../src/domain/logger.js'
import { fakeFunctionId } from '../../src/drivers/fake/fake-program.js'
import { startCore, type Core } from '../../src/main/core.js'
import { glanceImageSource } from '../../src/main/resources.js'
import { createGlanceClient } from '../../src/openstack/glance.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { glanceSkip, startGlance, type RunningGlance } from '../support/peers/glance.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = (await glanceSkip()) ?? (await placementSkip())
const HOST = 'prog-1'
const ADMIN = { userId: 'u-admin', projectId: 'p-ops' }
const VM = '0f9b0000-0000-4000-8000-000000000001'

void describe('programming a deployable, with real Glance and Placement', { skip }, () => {
  let glance: RunningGlance
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core
  let gzip: string
  let crc: string
  let deployable: { id: number; uuid: string; rp_uuid: string | null }

  before(async () => {
    ;[glance, placement] = await Promise.all([startGlance(), startPlacement()])
    gzip = await glance.upload(Buffer.from('function_id=gzip\nbitstream: gzip v1\n'))
    crc = await glance.upload(Buffer.from('function_id=crc32\nbitstream: crc v1\n'))
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: HOST,
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
        images: glanceImageSource(createGlanceClient({ endpoint: glance.url, timeoutMs: 10_000 })),
      },
      placement: { client: placement.client, createRootProvider: true },
    })
    await core.agent!.discoverNow()
    deployable = await db.db
      .selectFrom('deployables')
      .select(['id', 'uuid', 'rp_uuid'])
      .executeTakeFirstOrThrow()
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await Promise.all([glance?.stop(), placement?.stop()])
  })

  const program = (imageUuid: string) =>
    core.conductorClient.programDeployable({ uuid: deployable.uuid, imageUuid, ...ADMIN })
  const traits = () => placement.client.getTraits(deployable.rp_uuid!)
  const reserved = async () =>
    Object.values(await placement.client.getInventories(deployable.rp_uuid!))[0]!.reserved
  const bitstream = async () =>
    (
      await db.db
        .selectFrom('deployables')
        .select('bitstream_id')
        .where('id', '=', deployable.id)
        .executeTakeFirstOrThrow()
    ).bitstream_id
  const setFake = (options: Record<string, string>) =>
    core.conductorClient.updateDriver({ hostname: HOST, driver: 'fake', options })

  void it('puts the new function trait in Placement before it answers, and records who and what', async () => {
    const out = await program(gzip)
    assert.equal(out.imageUuid, gzip)
    assert.ok(
      (await traits()).includes(
        `CUSTOM_FPGA_FUNCTION_ID_FAKE_${fakeFunctionId('function_id=gzip')}`,
      ),
    )
    assert.equal(await reserved(), 0, 'the units are back in service')
    assert.equal(await bitstream(), gzip)
    // Programming again swaps the trait.
    await program(crc)
    const now = await traits()
    assert.ok(now.includes('CUSTOM_FPGA_FUNCTION_ID_FAKE_CRC32'))
    assert.ok(!now.includes('CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP'))
    await core.conductor!.drainCustody()
    const records = await db.db
      .selectFrom('custody_records')
      .selectAll()
      .where('kind', '=', 'program')
      .orderBy('id')
      .execute()
    assert.deepEqual(
      records.map((r) => [
        r.deployable_uuid,
        r.user_id,
        r.project_id,
        JSON.parse(r.detail!).image_uuid,
      ]),
      [
        [deployable.uuid, ADMIN.userId, ADMIN.projectId, gzip],
        [deployable.uuid, ADMIN.userId, ADMIN.projectId, crc],
      ],
    )
    const events = await db.db
      .selectFrom('events')
      .select(['event_type', 'payload'])
      .where('event_type', '=', 'accelerator.deployable.programmed')
      .execute()
    assert.equal(events.length, 2)
    const data = (JSON.parse(events[1]!.payload) as Record<string, Record<string, unknown>>)[
      'cyborg_object.data'
    ]!
    assert.equal(data.image_uuid, crc)
    assert.equal(data.user_id, ADMIN.userId)
    assert.equal(data.custody_record_uuid, records[1]!.uuid)
  })

  void it('shows the units reserved in Placement while the card is flashed', async () => {
    await setFake({ program_delay_ms: '1500' })
    const running = program(gzip)
    let seen = 0
    for (let i = 0; i < 40 && seen === 0; i++) {
      await new Promise((r) => setTimeout(r, 50))
      seen = await reserved()
    }
    assert.equal(seen, 16, 'every unit is reserved mid-flash')
    await running
    assert.equal(await reserved(), 0)
    await setFake({ program_delay_ms: '0' })
  })

  void it('refuses with a 409 naming the holder while a unit is allocated, then cleaning', async () => {
    await core.conductorClient.createDeviceProfile({
      name: 'fpga',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
    const [arq] = await core.conductorClient.createArqs({
      deviceProfileName: 'fpga',
      projectId: null,
      maxArqs: 1,
    })
    const [bound] = await core.conductorClient.bindArqs({
      bindings: { [arq!.uuid]: { hostname: HOST, instanceUuid: VM } },
    })
    assert.equal(bound!.state, 'Bound')
    await assert.rejects(program(crc), (err: Error & { code?: string }) => {
      assert.equal(err.name, 'ConflictError')
      assert.equal(err.code, 'RECONFIG_UNITS_HELD')
      assert.match(err.message, new RegExp(`accelerator request ${arq!.uuid}`))
      return true
    })
    // Released into cleaning: a slow clean keeps the unit out of service meanwhile.
    await setFake({ clean_delay_ms: '3000', program_delay_ms: '0' })
    await core.conductorClient.deleteArqs({ uuids: [arq!.uuid] })
    await assert.rejects(program(crc), /\(cleaning\)/)
    await core.conductor!.cleaningIdle()
    assert.equal(await bitstream(), gzip, 'nothing was programmed')
  })

  void it('changes nothing for an image refused before the card (not in Glance)', async () => {
    await assert.rejects(program('0f9b0000-0000-4000-8000-0000000000ff'), /Glance has no image/)
    assert.equal(await bitstream(), gzip)
    assert.equal(await reserved(), 0)
  })

  void it('forgets the image and records the failure when the card fails part-way', async () => {
    await setFake({ program_outcome: 'fail', clean_delay_ms: '0' })
    await assert.rejects(program(crc), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'PROGRAM_FAILED')
      return true
    })
    assert.equal(await bitstream(), null)
    assert.ok(!(await traits()).some((t) => t.startsWith('CUSTOM_FPGA_FUNCTION_ID_FAKE_')))
    assert.equal(await reserved(), 0, 'rediscovered: the units are back')
    const failed = await db.db
      .selectFrom('events')
      .select('payload')
      .where('event_type', '=', 'accelerator.deployable.program_failed')
      .orderBy('id')
      .execute()
    const data = failed.map(
      (e) =>
        (JSON.parse(e.payload) as Record<string, Record<string, unknown>>)['cyborg_object.data']!,
    )
    // The refused image (earlier) touched no card: no custody record; this failure has one.
    assert.deepEqual(
      data.map((d) => [
        d.custody_record_uuid === null,
        /Glance has no image|part-way/.test(String(d.reason)),
      ]),
      [
        [true, true],
        [false, true],
      ],
    )
    await setFake({ program_outcome: 'ok' })
  })

  void it('a bind that programs the card brings its function trait to Placement without waiting for discovery', async () => {
    await core.conductorClient.createDeviceProfile({
      name: 'fpga-gzip',
      description: null,
      groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': gzip }],
    })
    const [arq] = await core.conductorClient.createArqs({
      deviceProfileName: 'fpga-gzip',
      projectId: null,
      maxArqs: 1,
    })
    const [bound] = await core.conductorClient.bindArqs({
      bindings: {
        [arq!.uuid]: { hostname: HOST, instanceUuid: '0f9b0000-0000-4000-8000-000000000002' },
      },
    })
    assert.equal(bound!.state, 'Bound', bound!.reason ?? '')
    const want = `CUSTOM_FPGA_FUNCTION_ID_FAKE_${fakeFunctionId('function_id=gzip')}`
    for (let i = 0; i < 100 && !(await traits()).includes(want); i++)
      await new Promise((r) => setTimeout(r, 50))
    assert.ok((await traits()).includes(want), 'the trait is in Placement')
  })
})
