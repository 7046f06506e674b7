/**
 * Simulated agents reporting into the production shape's conductors over its broker
 * (bench/cost-model.ts), as `cyborg agent` does (src/agent/report-loop.ts): each period an
 * unchanged inventory is confirmed by one heartbeat carrying its hash, a changed one is sent in full
 * (reportInventory) and followed by a plain heartbeat (bench/ingest/ingest-hosts.ts playPeriod);
 * between periods every `[agent] report_interval` a plain lease heartbeat; and every period one
 * telemetry message on the fanout topic `cyborg.telemetry`. Each phase is paced over its seconds.
 */
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { createConductorClient, type ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import { TELEMETRY_TOPIC } from '../../src/rpc/agent-rpc.js'
import { buildTelemetry } from '../../src/agent/telemetry.js'
import type { InventorySnapshot } from '../../src/domain/inventory/inventory.js'
import { hostName, hostSnapshot, playPeriod } from '../ingest/ingest-hosts.js'
import type { BusCounts } from './around.js'

export interface Agents {
  /** Every host's first reports (all changed: rows created), until each is current; not measured. */
  seed(): Promise<{ reports: number; errors: number; seconds: number }>
  /** Each host's period report, unchanged: one heartbeat with its hash. */
  unchanged(seconds: number): Promise<Phase>
  /** `count` hosts' period reports, each changed (one device's board info): report + heartbeat. */
  changed(count: number, seconds: number): Promise<Phase>
  /** `count` plain lease heartbeats over `seconds`. */
  heartbeats(count: number, seconds: number): Promise<Phase>
  /** `count` telemetry messages (one per host and period, `devices` samples each) over `seconds`. */
  telemetry(count: number, seconds: number): Promise<Phase>
  close(): Promise<void>
}

export interface Phase {
  units: number
  errors: number
  /** Unchanged: reports the conductor asked for in full after all; changed: reports it took as unchanged. */
  mismatched?: number
  firstError?: string
  /** The simulated agents' own bus messages in the phase. */
  bus: () => BusCounts
}

/** Runs `one(i)` for i < count, i not before start + i/count × seconds, at most `inFlight` at once. */
async function paced(
  count: number,
  seconds: number,
  inFlight: number,
  one: (i: number) => Promise<unknown>,
) {
  const start = performance.now()
  let next = 0
  let errors = 0
  let firstError: string | undefined
  const worker = async () => {
    while (next < count) {
      const i = next++
      const wait = start + (i / count) * seconds * 1000 - performance.now()
      if (wait > 1) await new Promise((r) => setTimeout(r, wait))
      try {
        await one(i)
      } catch (err) {
        errors++
        firstError ??= (err as Error).message
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker))
  return { errors, ...(firstError === undefined ? {} : { firstError }) }
}

export async function startAgents(
  transportUrl: string,
  { hosts, devices, inFlight = 64 }: { hosts: number; devices: number; inFlight?: number },
): Promise<Agents> {
  let counts: BusCounts = {}
  const bus: MessageBus = await createRabbitMqBus({
    url: transportUrl,
    connectionName: 'cyborg-bench-agents',
    onMessage: (direction, kind) => {
      counts[`${direction} ${kind}`] = (counts[`${direction} ${kind}`] ?? 0) + 1
    },
  })
  const client: ConductorRpc = createConductorClient(bus, { timeoutMs: 60_000 })
  const snapshots: InventorySnapshot[] = Array.from({ length: hosts }, (_, i) =>
    hostSnapshot(i, devices),
  )
  const accepted = new Map<string, string>()
  let generation = 0
  const phase = async (run: () => Promise<Omit<Phase, 'bus'>>) => {
    counts = {}
    const out = await run()
    const seen = counts
    return { ...out, bus: () => seen }
  }
  const beat = (i: number) =>
    client.heartbeat({ host: hostName(i % hosts), binary: 'cyborg-agent', version: 'bench' })
  return {
    async seed() {
      const t = performance.now()
      // First sight creates each host's providers in Placement: a few hosts at a time.
      const out = await playPeriod(client, snapshots, { periodMs: 0, inFlight: 8, accepted })
      // A new device is offered (and its host's hash kept) after `[conductor]
      // health_recovery_reports` healthy reports: report again until every host is current.
      for (let k = 0; k < 5; k++) {
        const again = await playPeriod(client, snapshots, { periodMs: 0, inFlight: 8, accepted })
        if (again.changed === 0) break
      }
      return {
        reports: out.reports,
        errors: out.errors,
        seconds: Math.round(performance.now() - t) / 1000,
      }
    },
    unchanged: (seconds) =>
      phase(async () => {
        const out = await playPeriod(client, snapshots, {
          periodMs: seconds * 1000,
          inFlight,
          accepted,
        })
        const { reports: units, errors, changed: mismatched, firstError } = out
        return { units, errors, mismatched, ...(firstError ? { firstError } : {}) }
      }),
    changed: (count, seconds) =>
      phase(async () => {
        generation += 1
        const stride = hosts / count
        const picked = Array.from({ length: count }, (_, k) => Math.floor(k * stride))
        const changed = picked.map((i) => hostSnapshot(i, devices, generation))
        const out = await playPeriod(client, changed, {
          periodMs: seconds * 1000,
          inFlight,
          accepted,
        })
        for (const [k, i] of picked.entries()) snapshots[i] = changed[k]!
        const { reports: units, errors, firstError } = out
        return {
          units,
          errors,
          mismatched: units - errors - out.changed,
          ...(firstError ? { firstError } : {}),
        }
      }),
    heartbeats: (count, seconds) =>
      phase(async () => ({ units: count, ...(await paced(count, seconds, inFlight, beat)) })),
    telemetry: (count, seconds) =>
      phase(async () => {
        const samples = Array.from({ length: devices }, (_, n) => ({
          controlPath: `0000:${(0x10 + n).toString(16).padStart(2, '0')}:00.0`,
          values: {
            utilization_ratio: 0.5,
            memory_used_bytes: 1e9,
            temperature_celsius: 55,
            power_watts: 120,
          },
        }))
        const publish = (i: number) =>
          bus.publish(
            TELEMETRY_TOPIC,
            buildTelemetry(hostName(i % hosts), new Date(), [], new Map(), {
              devices: samples,
              periodMs: 60_000,
            }),
          )
        return { units: count, ...(await paced(count, seconds, inFlight, publish)) }
      }),
    close: () => bus.close(),
  }
}
