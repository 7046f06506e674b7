/**
 * One embedded core for the tests against real peers (Placement, Glance): SQLite, the in-process
 * bus, a conductor and one agent running the fake driver on `host`, activated at once, with its
 * periodic discovery pushed out of the test's way and its first discovery done.
 */
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { ConductorOptions } from '../../src/conductor/conductor.js'
import { noopLogger } from '../../src/domain/logger.js'
import {
  startCore,
  type Core,
  type CoreAgentOptions,
  type CorePlacement,
} from '../../src/main/core.js'
import { testDialects, type TestDatabase } from './db.js'

export interface FakeHostOptions {
  host: string
  placement: CorePlacement
  /** Agent options over the defaults (fake driver, auto-activate, no periodic discovery). */
  agent?: Partial<CoreAgentOptions>
  conductor?: ConductorOptions
}

export interface FakeHostCore {
  db: TestDatabase
  core: Core
  /** Stops the core, then closes its database. */
  stop(): Promise<void>
}

export async function startFakeHostCore(options: FakeHostOptions): Promise<FakeHostCore> {
  const db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
  const core = await startCore({
    db,
    bus: createInProcessBus(),
    log: noopLogger,
    agent: {
      host: options.host,
      enabledDrivers: ['fake'],
      autoActivate: true,
      periodicIntervalMs: 3_600_000,
      ...options.agent,
    },
    placement: options.placement,
    ...(options.conductor ? { conductor: options.conductor } : {}),
  })
  await core.agent!.discoverNow()
  return {
    db,
    core,
    async stop() {
      await core.stop()
      await db.close()
    },
  }
}
