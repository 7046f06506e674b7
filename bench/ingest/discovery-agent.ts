/**
 * Child process of bench/discovery.ts: measures the resident memory of one process after the
 * agent's discoveries + reports of the fixture host (start() when it has a bus, then discoverNow()). Modes:
 * - `full`: createAgent + in-process bus + a real conductor on SQLite (a file in `<dir>`), as `cyborg up`;
 * - `agent`: createAgent with a conductor stub (no database modules loaded), closer to `cyborg agent`;
 * - `rabbitmq`: createAgent on a RabbitMQ bus (serving the agent RPC, as `cyborg agent` does),
 *   reporting to the conductor the parent serves on `<transport url>`;
 * - `baseline`: Node + the tsx loader, nothing else loaded.
 * Prints one JSON line: { mode, rssMb, heapUsedMb, result }.
 * Usage: node --import tsx bench/ingest/discovery-agent.ts <fixture dir> <mode> [<transport url>]
 */
import path from 'node:path'
import type { ConductorRpc, InventoryReportResult } from '../../src/rpc/conductor-rpc.js'

const [dir, mode = 'full', transportUrl] = process.argv.slice(2)
if (!dir) throw new Error('usage: discovery-agent.ts <fixture dir> <full|agent|baseline>')

async function run(): Promise<InventoryReportResult | undefined> {
  if (mode === 'baseline') return undefined
  const { createAgent } = await import('../../src/agent/agent.js')
  const { createDrivers, DRIVER_REGISTRY } = await import('../../src/drivers/index.js')
  const { createFixtureHostProbe } =
    await import('../../src/drivers/host-probe/fixture-host-probe.js')
  const { noopLogger } = await import('../../src/domain/logger.js')
  const { systemClock } = await import('../../src/domain/time.js')
  const { DRIVER_OPTIONS, ENABLED_DRIVERS } = await import('./host-fixture.js')
  const host = 'bench-host'
  const probe = createFixtureHostProbe(dir!)
  const drivers = createDrivers(ENABLED_DRIVERS, { host: probe, hostname: host }, DRIVER_OPTIONS)
  const stubbed = { changed: false, added: 0, updated: 0, removed: 0 }
  let conductor: ConductorRpc = {
    reportInventory: async () => stubbed,
    heartbeat: async () => {},
  } as unknown as ConductorRpc
  let stop = async () => {}
  let bus
  if (mode === 'rabbitmq') {
    const { createRabbitMqBus } = await import('../../src/bus/rabbitmq-bus.js')
    const { createConductorClient } = await import('../../src/rpc/conductor-rpc.js')
    const b = (bus = await createRabbitMqBus({ url: transportUrl!, log: noopLogger }))
    conductor = createConductorClient(b)
    stop = () => b.close()
  } else if (mode === 'full') {
    const { openDatabase } = await import('../../src/db/core/connection.js')
    const { migrateToLatest } = await import('../../src/db/core/migrate.js')
    const { createInProcessBus } = await import('../../src/bus/in-process-bus.js')
    const { createConductor } = await import('../../src/conductor/conductor.js')
    const { createConductorClient, serveConductor } = await import('../../src/rpc/conductor-rpc.js')
    const db = await openDatabase(`sqlite:///${path.resolve(dir!, 'agent-bench.sqlite')}`)
    await migrateToLatest(db)
    bus = createInProcessBus()
    const impl = createConductor({ db, log: noopLogger, clock: systemClock })
    const server = await serveConductor(bus, impl)
    conductor = createConductorClient(bus)
    const b = bus
    stop = async () => {
      await server.unsubscribe()
      await impl.stop()
      await b.close()
      await db.close()
    }
  }
  const agent = createAgent(
    {
      conductor,
      drivers,
      driverRegistry: DRIVER_REGISTRY,
      log: noopLogger,
      clock: systemClock,
      ...(bus ? { bus } : {}),
      hostProbe: probe,
    },
    { host },
  )
  if (bus) await agent.start() // serves the agent RPC and runs a first discovery
  const result = await agent.discoverNow()
  ;(globalThis as { keep?: unknown }).keep = {
    stop: async () => {
      await agent.stop()
      await stop()
    },
  }
  return result
}

const result = await run()
const { rss, heapUsed } = process.memoryUsage()
const mb = (n: number) => Math.round((n / 1048576) * 10) / 10
process.stdout.write(
  `${JSON.stringify({ mode, rssMb: mb(rss), heapUsedMb: mb(heapUsed), result })}\n`,
)
const kept = (globalThis as { keep?: { stop(): Promise<void> } }).keep
await kept?.stop()
