/**
 * Remote accelerators end to end below the API (ConductorRpc 1.4 `registerRemoteAccelerator`):
 * conductor → the first live agent that runs the `remote` driver → its report, on every dialect.
 * Agents are real (startCore with a file cache in a temp dir) over the in-process bus.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects, type TestDatabase } from '../support/db.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { fakeDeployableName } from '../../src/drivers/fake/fake.js'
import { getAccelerator } from '../../src/db/reads/v1-accelerators.js'
import { ConflictError, InvalidInputError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { eventually } from './helpers.js'

const U1 = '8e45a2ea-5364-4b0d-a252-bf8becaa606e'
const U2 = '2c1f2f7e-1a1b-4c2d-8e3f-0123456789ab'
const PLAIN = 'a-plain'
const RACK = 'b-rack'

const conflict = (code: string, field?: string) => (err: unknown) =>
  err instanceof ConflictError &&
  err.code === code &&
  (field === undefined || err.details?.field === field)

for (const dialect of await testDialects()) {
  void describe(`remote accelerators on ${dialect.name}`, { skip: dialect.skip }, () => {
    let handle: TestDatabase
    let bus: MessageBus
    let conductor: Core
    let plain: Core
    let rack: Core | undefined
    let stateRoot: string

    /** An agent with the fake and remote drivers, its file cache in `dir`; auto_activate on. */
    const startRack = async (dir: string) =>
      startCore({
        bus,
        log: noopLogger,
        conductor: false,
        rpcTimeoutMs: 10_000,
        agent: {
          host: RACK,
          enabledDrivers: ['fake', 'generic_remote'],
          autoActivate: true,
          periodicIntervalMs: 3_600_000,
          stateDir: dir,
          hostProbe: createFixtureHostProbe('/nonexistent'),
        },
      })
    const agentRow = (host: string) =>
      handle.db
        .selectFrom('services')
        .selectAll()
        .where('host', '=', host)
        .where('binary', '=', 'cyborg-agent')
        .executeTakeFirst()
    const remoteRows = () =>
      handle.db
        .selectFrom('deployables as p')
        .innerJoin('devices as d', 'd.id', 'p.device_id')
        .select([
          'p.uuid',
          'p.name',
          'd.hostname',
          'd.type',
          'd.cpid_type',
          'd.cpid_info',
          'd.lifecycle',
        ])
        .where('d.cpid_type', '=', 'REMOTE')
        .orderBy('p.name')
        .execute()

    before(async () => {
      handle = await dialect.create()
      bus = createInProcessBus()
      stateRoot = await mkdtemp(path.join(tmpdir(), 'cyborg-remote-'))
      conductor = await startCore({
        db: handle,
        bus,
        log: noopLogger,
        conductor: { saveIntervalMs: 5, maxBatch: 64 },
        rpcTimeoutMs: 10_000,
      })
      plain = await startCore({
        bus,
        log: noopLogger,
        conductor: false,
        rpcTimeoutMs: 10_000,
        agent: {
          host: PLAIN,
          enabledDrivers: ['fake'],
          periodicIntervalMs: 3_600_000,
          hostProbe: createFixtureHostProbe('/nonexistent'),
        },
      })
      await eventually(() => agentRow(PLAIN))
    })
    after(async () => {
      await rack?.stop()
      await plain?.stop()
      await conductor?.stop()
      await bus?.close()
      await handle?.close()
      if (stateRoot) await rm(stateRoot, { recursive: true, force: true })
    })

    void it('refuses with 409 REMOTE_BACKEND_NOT_ENABLED, naming the option, while no agent runs the remote driver', async () => {
      await assert.rejects(
        conductor.conductorClient.registerRemoteAccelerator({ name: 'IPSec Card', uuid: U1 }),
        (err) => {
          assert.ok(conflict('REMOTE_BACKEND_NOT_ENABLED')(err))
          assert.match((err as Error).message, /\[agent\] enabled_drivers.*remote/)
          return true
        },
      )
      assert.deepEqual(await remoteRows(), [])
    })

    void it('registers through the agent that runs the driver: the requested uuid, inactive despite auto_activate', async () => {
      rack = await startRack(path.join(stateRoot, 'rack'))
      await eventually(() => agentRow(RACK))
      const answer = await conductor.conductorClient.registerRemoteAccelerator({
        name: 'IPSec Card',
        uuid: U1.toUpperCase(),
      })
      assert.deepEqual(answer, { uuid: U1, hostname: RACK })
      assert.deepEqual(await remoteRows(), [
        {
          uuid: U1,
          name: 'IPSec Card',
          hostname: RACK,
          type: 'REMOTE',
          cpid_type: 'REMOTE',
          cpid_info: `{"uuid":"${U1}"}`,
          lifecycle: 'inactive',
        },
      ])
      // The fake device of the same report did get auto-activated.
      const fake = await handle.db
        .selectFrom('devices')
        .select('lifecycle')
        .where('hostname', '=', RACK)
        .where('cpid_type', '=', 'PCI')
        .executeTakeFirstOrThrow()
      assert.equal(fake.lifecycle, 'active')
      const v1 = await getAccelerator(handle.db, U1)
      assert.equal(v1.remote, true)
      assert.equal(v1.address, `remote:${U1}`)
      assert.equal(
        (
          await getAccelerator(
            handle.db,
            (
              await handle.db
                .selectFrom('deployables')
                .select('uuid')
                .where('name', '=', fakeDeployableName(PLAIN))
                .executeTakeFirstOrThrow()
            ).uuid,
          )
        ).remote,
        false,
      )
    })

    void it('makes a uuid when none is given', async () => {
      const { uuid } = await conductor.conductorClient.registerRemoteAccelerator({
        name: 'rack card 2',
      })
      assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      assert.deepEqual(
        (await remoteRows()).map((r) => [r.name, r.uuid]),
        [
          ['IPSec Card', U1],
          ['rack card 2', uuid],
        ],
      )
    })

    void it('refuses a taken name or uuid with ACCELERATOR_EXISTS naming the field, and bad input naming it', async () => {
      const client = conductor.conductorClient
      await assert.rejects(
        client.registerRemoteAccelerator({ name: 'IPSec Card', uuid: U2 }),
        conflict('ACCELERATOR_EXISTS', 'name'),
      )
      await assert.rejects(
        client.registerRemoteAccelerator({ name: 'other', uuid: U1 }),
        conflict('ACCELERATOR_EXISTS', 'uuid'),
      )
      // A discovered deployable's name is taken just the same.
      await assert.rejects(
        client.registerRemoteAccelerator({ name: fakeDeployableName(PLAIN) }),
        conflict('ACCELERATOR_EXISTS', 'name'),
      )
      await assert.rejects(
        client.registerRemoteAccelerator({ name: '' }),
        (err) => err instanceof InvalidInputError && err.details?.field === 'name',
      )
      await assert.rejects(
        client.registerRemoteAccelerator({ name: 'x', uuid: 'nope' }),
        (err) => err instanceof InvalidInputError && err.details?.field === 'uuid',
      )
      assert.equal((await remoteRows()).length, 2)
    })

    void it('survives the next periodic report and an agent restart (the registrations are in the cache)', async () => {
      const before = await remoteRows()
      await rack!.agent!.discoverNow()
      assert.deepEqual(await remoteRows(), before)

      await rack!.stop()
      const saved = await readFile(path.join(stateRoot, 'rack', 'remote-accelerators.json'), 'utf8')
      assert.match(saved, /^cyborg-agent-cache 1 sha256=[0-9a-f]{64}\n/)
      rack = await startRack(path.join(stateRoot, 'rack'))
      await rack.agent!.discoverNow()
      assert.deepEqual(await remoteRows(), before)
    })

    void it('loses them when restarted without its cache: the cache is what keeps them', async () => {
      await rack!.stop()
      rack = await startRack(path.join(stateRoot, 'rack-empty'))
      await rack.agent!.discoverNow()
      assert.deepEqual(await remoteRows(), [])
    })
  })
}
