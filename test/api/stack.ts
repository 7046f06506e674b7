/**
 * A real in-process stack for API tests: a fresh SQLite database, the in-process bus, a conductor
 * and a fake-driver agent (host `node1`) started by startCore, and the app on top. `node2` gets
 * four more sample devices (GPUs and FPGAs of two vendors) reported straight to the conductor.
 */
import pino from 'pino'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { ApiOptions } from '../../src/api/types.js'
import type { ConductorOptions } from '../../src/conductor/conductor.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { startCore, type Core } from '../../src/main/core.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import type { CleanUnitResult } from '../../src/rpc/agent-rpc.js'
import { serveStandInAgent } from '../support/stand-in-agent.js'
import { faultOf } from '../support/api-app.js'
import type { MessageBus } from '../../src/bus/bus.js'

export const HOST = 'api.test:6666'

export interface Stack {
  app: FastifyInstance
  db: TestDatabase
  core: Core
  bus: MessageBus
  /** `app.inject` with `Host: api.test:6666` and, when given, a microversion. */
  request(options: InjectOptions & { version?: string }): Promise<LightMyRequestResponse>
  close(): Promise<void>
}

/**
 * `autoActivate`: node1's fake device lands active (bindable) instead of inactive; `conductor`: more conductor options;
 * `enabledDrivers`: node1's drivers (`['fake', 'remote']` for remote accelerators), default `['fake']`.
 */
export async function startStack({
  autoActivate = false,
  conductor = {},
  enabledDrivers = ['fake'],
  ...options
}: ApiOptions & {
  autoActivate?: boolean
  conductor?: ConductorOptions
  enabledDrivers?: string[]
} = {}): Promise<Stack> {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  const bus = createInProcessBus()
  const log = pino({ level: 'silent' })
  const core = await startCore({
    db,
    bus,
    log,
    conductor: { saveIntervalMs: 1, maxBatch: 64, ...conductor },
    agent: { host: 'node1', enabledDrivers, autoActivate, periodicIntervalMs: 3_600_000 },
  })
  const app = await createApp({ db: db.db, conductor: core.conductorClient, log }, options)
  const stack: Stack = {
    app,
    db,
    core,
    bus,
    request: ({ version, headers, ...rest }) =>
      app.inject({
        ...rest,
        headers: {
          host: HOST,
          ...(version ? { 'openstack-api-version': `accelerator ${version}` } : {}),
          ...headers,
        },
      }),
    async close() {
      await app.close()
      await core.stop()
      await bus.close()
      await db.close()
    },
  }
  try {
    await core.agent!.discoverNow()
    const devices = [0, 1, 2, 3].map((n) => sampleDevice('node2', n))
    await core.conductorClient.reportInventory({
      host: 'node2',
      hash: inventoryHash(devices),
      devices,
      autoActivate: true,
    })
  } catch (err) {
    await stack.close()
    throw err
  }
  return stack
}

/** The faultstring of a compat-v2 error body (`error_message` an object, as 17.0.0 sends it). */
export function fault(res: LightMyRequestResponse): string {
  return faultOf(res.body).faultstring
}

/**
 * Serves, on the stack's bus, a stand-in agent for `host` (a host reported straight to the
 * conductor, with no agent of its own) that answers `cleanUnit` at once, as the fake driver does,
 * so that units released there come back in service (docs/cleaning.md), and `abortClean` (a
 * force-in-service) with "none ran". Its other methods fail.
 */
export async function serveCleaningAgent(stack: Stack, host: string): Promise<void> {
  const cleanUnit = async (): Promise<CleanUnitResult> => ({
    driver: 'fake',
    policy: 'auto',
    method: 'fake',
    evidenceSha256: '0'.repeat(64),
    durationMs: 0,
  })
  await serveStandInAgent(stack.bus, host, {
    cleanUnit,
    abortClean: async () => ({ aborted: false }),
  })
}
