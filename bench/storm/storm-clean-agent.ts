/**
 * The boot storm's stand-in agent for STORM_HOST (issue 18, docs/cleaning.md): it serves only
 * `cleanUnit` (AgentRpc 1.5), through the agent's own path: `createUnitCleaner` finds the unit in
 * the storm inventory's devices and runs `runClean` with a fake driver (`clean_delay_ms`, default
 * 0), which cleans without touching the host. Every other agent method rejects: the storm's
 * TEST_PCI handles need no agent to bind. Without it, released units stay `cleaning` for an agent
 * that does not exist, and the storm runs out of units.
 */
import type { MessageBus } from '../../src/bus/bus.js'
import { createUnitCleaner } from '../../src/agent/cleaning.js'
import { runClean } from '../../src/drivers/clean.js'
import { createMemoryHostProbe } from '../../src/drivers/driver-contract.case.js'
import { createFakeDriver } from '../../src/drivers/fake/fake.js'
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'
import { noopLogger, type Logger } from '../../src/domain/logger.js'
import type { CleanUnitResult } from '../../src/rpc/agent-rpc.js'
import { serveStandInAgent } from '../../test/support/stand-in-agent.js'
import { STORM_HOST, stormDevices } from '../../test/support/storm-inventory.js'

export interface StormCleanAgentOptions {
  /** The devices seedStorm reported. @default stormDevices(4, 64) (seedStorm's default) */
  devices?: DiscoveredDevice[]
  /** The fake driver's `clean_delay_ms`. @default 0 */
  cleanDelayMs?: number
  log?: Logger
}

export interface StormCleanAgent {
  /** Cleans answered (ok) and refused so far. */
  stats(): { cleaned: number; failed: number }
  /** Aborts running cleans and stops serving (the caller closes the bus). */
  stop(): Promise<void>
}

/** Serves the stand-in agent of STORM_HOST on `bus`. */
export async function serveStormCleanAgent(
  bus: MessageBus,
  options: StormCleanAgentOptions = {},
): Promise<StormCleanAgent> {
  const { devices = stormDevices(4, 64), cleanDelayMs = 0, log = noopLogger } = options
  const driver = createFakeDriver(
    { host: createMemoryHostProbe({}), hostname: STORM_HOST },
    { clean_delay_ms: String(cleanDelayMs) },
  )
  const controller = new AbortController()
  const cleaner = createUnitCleaner({
    // The fake driver's clean reads only the target's handle: the storm's devices stand as its own.
    owner: (match) => {
      const device = devices.find(match)
      return Promise.resolve(device && { driver, device })
    },
    runClean,
    signal: controller.signal,
    log,
  })
  const counts = { cleaned: 0, failed: 0 }
  const cleanUnit = (req: unknown): Promise<CleanUnitResult> =>
    cleaner.cleanUnit(req).then(
      (result) => {
        counts.cleaned++
        return result
      },
      (err: unknown) => {
        counts.failed++
        throw err
      },
    )
  const server = await serveStandInAgent(bus, STORM_HOST, { cleanUnit })
  return {
    stats: () => ({ ...counts }),
    async stop() {
      controller.abort(new Error('stopping'))
      await server.unsubscribe()
    },
  }
}
