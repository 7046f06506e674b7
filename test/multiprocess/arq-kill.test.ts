/**
 * kill -9 in the middle of a bind storm, on every database. PostgreSQL and MariaDB run the
 * production shape (`cyborg api` + `cyborg conductor` over RabbitMQ; the conductor dies, a new one
 * starts). SQLite runs its own deployment, the embedded `cyborg up` (API and conductor in one
 * process, here on RabbitMQ too): it dies and starts again on the same database file. The storm
 * host's handles are PCI, so each bind waits for the host's agent to prepare the device (a stand-in
 * in this process that answers after 50–250 ms, since vfio-pci cannot run here): the kill finds
 * handles claimed by binds that will never finish. Afterwards no accelerator request
 * is lost, none stays BindStarted past `[DEFAULT] bind_timeout` (the reaper), and every handle in
 * use belongs to exactly one Bound request.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects, type TestDatabase, type TestDialect } from '../support/db.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { createConductor } from '../../src/conductor/conductor.js'
import { noopLogger } from '../../src/domain/logger.js'
import { STORM_HOST, seedStorm } from '../support/storm-inventory.js'
import { serveStandInAgent } from '../support/stand-in-agent.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'
import {
  assertConverged,
  bindStorm,
  bindingNow,
  bindsUnderWay,
  createStormArqs,
  stormProviders,
  tally,
  type Outcome,
} from '../support/arq-storm.js'

const [dialects, broker] = await Promise.all([testDialects(), testBroker()])
const BIND_TIMEOUT_S = 2
const VMS = 120
const HANDLES = { devices: 2, handles: 64 } // 128 handles: every VM could bind

/** The processes under test, as far as the storm cares: where the API is, what to kill, how to come back. */
interface Deployment {
  /** A handle on the same database, for the test's own reads. */
  db: DatabaseHandle
  apiUrl: string
  /** The outcomes a PATCH of the storm may have when the kill lands. */
  expected: Outcome[]
  /** kill -9 of the process that binds; resolves once it is gone. */
  kill(): Promise<void>
  /** Starts the binding process again, on the same database. */
  restart(): Promise<void>
  close(): Promise<void>
}

/** The storm host's agent, as far as a bind needs it: `prepare` answers after a while. */
async function standInAgent(vhostUrl: string): Promise<() => Promise<void>> {
  const bus = await createRabbitMqBus({ url: vhostUrl })
  const prepare = async ({ address }: { address: string }) => {
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 200))
    return { address, changed: true }
  }
  // Every other method of the agent fails: a bind of PCI handles needs only `prepare`.
  // A bus left open would keep this test file from ever exiting.
  await serveStandInAgent(bus, STORM_HOST, { prepare }).catch(async (err: unknown) => {
    await bus.close()
    throw err
  })
  return () => bus.close()
}

const started: RunningService[] = []
const startCyborg = async (command: string, env: Record<string, string>, stateDir?: string) => {
  const s = await startService({
    command: [command],
    env,
    stateDir,
    ready: command === 'conductor' ? printed(/"msg":"cyborg conductor is ready"/) : undefined,
  })
  started.push(s)
  return s
}
const kill9 = async (s: RunningService) => {
  const gone = new Promise((r) => s.child.once('exit', r))
  s.child.kill('SIGKILL')
  await gone
}
const baseEnv = (connection: string): Record<string, string> => ({
  CYBORG_DATABASE__CONNECTION: connection,
  CYBORG_DEFAULT__BIND_TIMEOUT: String(BIND_TIMEOUT_S),
  CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '3',
  // The storm host is seeded without an agent: no heartbeat keeps its lease (issue 15).
  CYBORG_DEFAULT__SERVICE_DOWN_TIME: '3600',
  CYBORG_LOG_LEVEL: 'info',
})

/** PostgreSQL, MariaDB: `cyborg api` and `cyborg conductor` over RabbitMQ; the conductor is killed. */
async function separate(dialect: TestDialect): Promise<Deployment> {
  const [db, vhost]: [TestDatabase, TestVhost] = await Promise.all([
    dialect.create(),
    broker.createVhost(),
  ])
  const env = { ...baseEnv(db.url), CYBORG_DEFAULT__TRANSPORT_URL: vhost.url }
  const sync = await runCommand(['db', 'sync'], env)
  assert.equal(sync.code, 0, sync.output)
  let conductor = await startCyborg('conductor', env)
  const api = await startCyborg('api', env)
  const bus = await createRabbitMqBus({ url: vhost.url })
  await seedStorm(
    createConductorClient(bus, { timeoutMs: 10_000 }),
    HANDLES.devices,
    HANDLES.handles,
    'PCI',
  )
  await bus.close()
  const stopAgent = await standInAgent(vhost.url)
  return {
    db,
    apiUrl: api.url,
    expected: [202, 503],
    kill: () => kill9(conductor),
    restart: async () => void (conductor = await startCyborg('conductor', env)),
    close: async () => {
      await stopAgent()
      await vhost.drop()
      await db.close()
    },
  }
}

/** SQLite: the embedded `cyborg up` on a database file in its state dir; the whole process is killed. */
async function embedded(): Promise<Deployment> {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'cyborg-arq-kill-'))
  const vhost = await broker.createVhost()
  const env: Record<string, string> = {
    ...baseEnv(`sqlite:///${path.join(stateDir, 'cyborg.sqlite')}`),
    CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
  }
  const sync = await runCommand(['db', 'sync'], env)
  assert.equal(sync.code, 0, sync.output)
  // Seeded in this process, as an agent's report would be, before `up` opens the file.
  const db = await openDatabase(env.CYBORG_DATABASE__CONNECTION!)
  const seeder = createConductor(
    { db, log: noopLogger, clock: { now: () => new Date() } },
    { saveIntervalMs: 1, reapIntervalMs: 0 },
  )
  await seedStorm(seeder, HANDLES.devices, HANDLES.handles, 'PCI')
  await seeder.stop()
  const stopAgent = await standInAgent(vhost.url)
  let up = await startCyborg('up', env, stateDir)
  return {
    db,
    apiUrl: up.url,
    expected: [202, 503, 'network error'],
    kill: () => kill9(up),
    restart: async () => void (up = await startCyborg('up', env, stateDir)),
    close: async () => {
      await stopAgent()
      await vhost.drop()
      await db.close()
      await rm(stateDir, { recursive: true, force: true })
    },
  }
}

after(async () => {
  for (const s of started) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  await Promise.all(started.map((s) => s.stop().catch(() => null)))
})

for (const dialect of dialects) {
  const shape = dialect.name === 'sqlite' ? '`cyborg up`' : 'the conductor'
  const skip = dialect.skip ?? broker.skip
  void describe(
    `kill -9 of ${shape} mid-bind on ${dialect.name}: nothing lost, nothing left binding`,
    { skip, timeout: 120_000 },
    () => {
      let deployment: Deployment | undefined
      before(async () => {
        deployment = dialect.name === 'sqlite' ? await embedded() : await separate(dialect)
      })
      after(() => deployment?.close())

      void it('binds through the crash and converges', async (t) => {
        const { db, apiUrl, expected } = deployment!
        const providers = await stormProviders(apiUrl)
        assert.equal(providers.length, HANDLES.devices)
        const uuids = await createStormArqs(apiUrl, VMS)
        // The storm: one PATCH per VM, all at once; the process dies once some have bound and others are binding.
        const storm = bindStorm(apiUrl, uuids, providers)
        await bindsUnderWay(db.db, storm)
        await deployment!.kill()
        const outcomes = await storm
        const unexpected = outcomes.filter((o) => !expected.includes(o))
        assert.deepEqual([...new Set(unexpected)], [], `only ${expected.join(', ')}`)
        const binding = await bindingNow(db.db)
        t.diagnostic(tally(outcomes, binding.length))
        // The kill must have caught binds in flight, else this test proves nothing.
        assert.ok(
          binding.length > 0,
          `the kill came after the binds were over: ${tally(outcomes, 0)}`,
        )

        await deployment!.restart()
        // The reaper runs every bind_timeout / 4 and moves what is older than bind_timeout.
        const answered = uuids.filter((_, i) => outcomes[i] === 202)
        t.diagnostic(
          await assertConverged(
            db.db,
            uuids,
            answered,
            Date.now() + BIND_TIMEOUT_S * 1000 * 3 + 5000,
          ),
        )
      })
    },
  )
}
