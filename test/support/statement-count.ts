/**
 * Counts the statements of a core over SQLite in-process (test/core/cycle-statements.test.ts):
 * every statement Kysely runs, BEGIN/COMMIT/SAVEPOINT included, by SQL text, with the database's
 * direct reader off so that reads are seen too.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { migrateToLatest } from '../../src/db/core/migrate.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { ConductorOptions } from '../../src/conductor/conductor.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createNovaClient } from '../../src/openstack/nova.js'

export interface StatementTally {
  /** Statements by SQL text (whitespace squeezed, IN lists folded). */
  byText: Map<string, number>
  total: number
  commits: number
  /** Starts counting afresh. */
  reset(): void
  /** The counts, most frequent first. */
  top(n?: number): [string, number][]
}

const squeeze = (sql: string) =>
  sql
    .replace(/\s+/g, ' ')
    .replace(/\((\?, )+\?\)/g, '(?…)')
    .replace(/\((\?, )+\?\)/g, '(?…)')
    .replace(/(\(\?…\), )+\(\?…\)/g, '(?…)…')
    .trim()

export function createTally(): StatementTally & { log(sql: string): void } {
  const tally = {
    byText: new Map<string, number>(),
    total: 0,
    commits: 0,
    log(sql: string) {
      const text = squeeze(sql)
      tally.total++
      if (/^commit$/i.test(text)) tally.commits++
      tally.byText.set(text, (tally.byText.get(text) ?? 0) + 1)
    },
    reset() {
      tally.byText.clear()
      tally.total = 0
      tally.commits = 0
    },
    top: (n = 40) => [...tally.byText].sort((a, b) => b[1] - a[1]).slice(0, n),
  }
  return tally
}

export interface CountedCore {
  db: DatabaseHandle
  core: Core
  tally: ReturnType<typeof createTally>
  rpUuid: string
  stop(): Promise<void>
}

/** Relay and sealer passes only when `settle` drains them: counts that timers cannot move. */
export const DRAIN_ONLY: ConductorOptions = {
  events: { coalesceMs: 3_600_000, pollIntervalMs: 3_600_000 },
  custody: { coalesceMs: 3_600_000, pollIntervalMs: 3_600_000 },
}

/**
 * A core (conductor, agent with the fake driver on node1, a Nova stand-in) whose statements count;
 * `conductor`: its options (default: as shipped).
 */
export async function startCountedCore(
  url = 'sqlite://',
  conductor: ConductorOptions = {},
): Promise<CountedCore> {
  const tally = createTally()
  const db = await openDatabase(url, {
    log: (e) => {
      if (e.level === 'query') tally.log(e.query.sql)
    },
  })
  await migrateToLatest(db)
  const nova: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
  })
  await new Promise<void>((r) => nova.listen(0, '127.0.0.1', r))
  const endpoint = `http://127.0.0.1:${(nova.address() as AddressInfo).port}/v2.1`
  const core = await startCore({
    db,
    bus: createInProcessBus(),
    log: noopLogger,
    conductor,
    agent: {
      host: 'node1',
      enabledDrivers: ['fake'],
      autoActivate: true,
      periodicIntervalMs: 3_600_000,
    },
    nova: createNovaClient({ endpoint, token: 'admin', timeoutMs: 5000 }),
  })
  await core.agent!.discoverNow()
  const rpUuid = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
    .rp_uuid!
  await core.conductorClient.createDeviceProfile({
    name: 'one-fpga',
    description: null,
    groups: [{ 'resources:FPGA': '1' }],
  })
  return {
    db,
    core,
    tally,
    rpUuid,
    async stop() {
      await core.stop()
      await db.close()
      nova.close()
    },
  }
}

/** One Nova bind cycle: create an ARQ, bind it to `instance` on node1's provider, delete by instance. */
export async function bindCycle(c: CountedCore, instance: string): Promise<void> {
  const client = c.core.conductorClient
  const [arq] = await client.createArqs({
    deviceProfileName: 'one-fpga',
    projectId: 'p1',
    maxArqs: 1,
  })
  const [out] = await client.bindArqs({
    bindings: {
      [arq!.uuid]: { hostname: 'node1', deviceRpUuid: c.rpUuid, instanceUuid: instance },
    },
  })
  if (out?.state !== 'Bound') throw new Error(`bind ended ${out?.state}`)
  await client.deleteArqs({ instanceUuid: instance })
}

/** Waits until the relay, the sealer and cleaning have nothing left. */
export async function settle(c: CountedCore): Promise<void> {
  const conductor = c.core.conductor!
  for (let i = 0; i < 3; i++) {
    await conductor.cleaningIdle()
    await conductor.drainEvents()
    await conductor.drainCustody()
  }
}
