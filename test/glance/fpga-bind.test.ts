/**
 * Binding a request whose profile names an FPGA bitstream: the agent fetches the image from a real
 * Glance (glance-api 25, file store), checks it against the hash Glance recorded, programs the card
 * (the fake driver's program step), and the deployable remembers the image. A corrupted image
 * fails the bind with the reason, and frees the handle.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { glanceImageSource } from '../../src/main/resources.js'
import { createGlanceClient } from '../../src/openstack/glance.js'
import { glanceSkip, startGlance, type RunningGlance } from '../support/peers/glance.js'

const skip = await glanceSkip()

void describe('FPGA programming during a bind, with images from real Glance', { skip }, () => {
  let glance: RunningGlance
  let db: TestDatabase
  let core: Core
  let good: string
  let corrupt: string

  before(async () => {
    glance = await startGlance()
    good = await glance.upload(Buffer.from('bitstream: gzip accelerator v1'), {
      'accel:function_id': 'gzip',
    })
    corrupt = await glance.upload(Buffer.from('bitstream: crc accelerator v1'))
    // The store's copy rots after upload (same length, some bits flipped): Glance serves it, but its
    // recorded hash no longer matches the bytes.
    await writeFile(path.join(glance.imagesDir, corrupt), 'bitstream: crc accelerator v2')
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: 'fpga-1',
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
        images: glanceImageSource(createGlanceClient({ endpoint: glance.url, timeoutMs: 10_000 })),
      },
    })
    await core.agent!.discoverNow()
    for (const [name, accel] of [
      ['by-id', { 'accel:bitstream_id': good }],
      ['by-function', { 'accel:function_id': 'gzip' }],
      ['corrupt', { 'accel:bitstream_id': corrupt }],
    ] as const) {
      await core.conductorClient.createDeviceProfile({
        name,
        description: null,
        groups: [{ 'resources:FPGA': '1', ...accel }],
      })
    }
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await glance?.stop()
  })

  const bindOne = async (profile: string, vm: string) => {
    const [arq] = await core.conductorClient.createArqs({
      deviceProfileName: profile,
      projectId: null,
      maxArqs: 4,
    })
    const [out] = await core.conductorClient.bindArqs({
      bindings: { [arq!.uuid]: { hostname: 'fpga-1', instanceUuid: vm } },
    })
    return out!
  }
  const bitstream = async () =>
    (await db.db.selectFrom('deployables').select('bitstream_id').executeTakeFirstOrThrow())
      .bitstream_id

  void it('programs the image a profile names by id, and remembers it', async () => {
    assert.equal((await bindOne('by-id', '0f9a0000-0000-4000-8000-000000000001')).state, 'Bound')
    assert.equal(await bitstream(), good)
  })

  void it('finds the image by its accel:function_id', async () => {
    assert.equal(
      (await bindOne('by-function', '0f9a0000-0000-4000-8000-000000000002')).state,
      'Bound',
    )
    assert.equal(await bitstream(), good)
  })

  void it('refuses an image whose bytes do not match Glance’s hash: BindFailed, handle freed', async () => {
    const inUse = async () =>
      (await db.db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute())
        .length
    const before = await inUse()
    const out = await bindOne('corrupt', '0f9a0000-0000-4000-8000-000000000003')
    assert.equal(out.state, 'BindFailed')
    assert.match(out.reason ?? '', new RegExp(`image ${corrupt} failed verification: its sha512`))
    assert.equal(await inUse(), before)
    assert.equal(await bitstream(), good, 'the card keeps the image it had')
  })
})
