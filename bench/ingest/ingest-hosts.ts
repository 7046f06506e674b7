/**
 * Simulated agents for bench/ingest.ts: each host's full snapshot (`devices` sample devices, hashed
 * like the agent hashes them) and the schedule of one period, spread evenly over its wall time.
 */
import { buildSnapshot } from '../../src/agent/snapshot.js'
import { sampleDevice } from '../../test/support/sample-inventory.js'
import type { InventorySnapshot } from '../../src/domain/inventory/inventory.js'
import type { ConductorRpc, InventoryReportResult } from '../../src/rpc/conductor-rpc.js'

export const hostName = (i: number) => `bench-host-${String(i).padStart(6, '0')}`

/**
 * Host `i`'s snapshot at `generation`: generation 0 is the first report; a later generation
 * changes one device's `vendorBoardInfo` (a firmware update), so the diff updates one row.
 */
export function hostSnapshot(i: number, devices: number, generation = 0): InventorySnapshot {
  const host = hostName(i)
  const list = Array.from({ length: devices }, (_, n) => sampleDevice(host, n))
  if (generation > 0)
    list[generation % devices]!.vendorBoardInfo = { firmware: `gen-${generation}` }
  return buildSnapshot(host, list)
}

/** The hosts that change in period `p` (> 0): `round(hosts × fraction)` of them, spread evenly, shifting each period. */
export function changedHosts(hosts: number, fraction: number, p: number): Set<number> {
  const count = Math.round(hosts * fraction)
  const stride = count > 0 ? hosts / count : 0
  return new Set(Array.from({ length: count }, (_, k) => (Math.floor(k * stride) + p) % hosts))
}

export interface PeriodOutcome {
  reports: number
  changed: number
  unchanged: number
  errors: number
  firstError?: string
  wallSeconds: number
  /** How late the last report left against its slot in the compressed schedule. */
  maxLagMs: number
  latencyMs: { p50: number; p99: number; max: number }
}

/**
 * Sends every host's report once, host `i` not before `start + i/hosts × periodMs`, with at most
 * `inFlight` calls outstanding. Resolves when every call has answered. `accepted` (host → hash the
 * conductor took in full) carries over between periods, like an agent's memory.
 */
export async function playPeriod(
  client: ConductorRpc,
  snapshots: readonly InventorySnapshot[],
  {
    periodMs,
    inFlight,
    accepted,
  }: { periodMs: number; inFlight: number; accepted: Map<string, string> },
): Promise<PeriodOutcome> {
  const hosts = snapshots.length
  const start = performance.now()
  const latencies: number[] = []
  let next = 0
  let changed = 0
  let errors = 0
  let firstError: string | undefined
  let maxLagMs = 0
  const worker = async () => {
    while (next < hosts) {
      const i = next++
      const due = start + (i / hosts) * periodMs
      const wait = due - performance.now()
      if (wait > 1) await new Promise((r) => setTimeout(r, wait))
      const sent = performance.now()
      maxLagMs = Math.max(maxLagMs, sent - due)
      try {
        // As the agent does: a hash the conductor accepted last time is confirmed, not resent.
        const snapshot = snapshots[i]!
        const current =
          accepted.get(snapshot.host) === snapshot.hash &&
          (
            await client.heartbeat({
              host: snapshot.host,
              binary: 'cyborg-agent',
              version: 'bench',
              inventoryHash: snapshot.hash,
            })
          )?.inventoryCurrent === true
        if (!current) {
          const result: InventoryReportResult = await client.reportInventory({
            ...snapshot,
            autoActivate: false,
          })
          accepted.set(snapshot.host, snapshot.hash)
          if (result.changed) changed++
          // Every agent heartbeats once a period; an unchanged one did it above, with its hash.
          await client.heartbeat({ host: snapshot.host, binary: 'cyborg-agent', version: 'bench' })
        }
      } catch (err) {
        errors++
        firstError ??= (err as Error).message
      }
      latencies.push(performance.now() - sent)
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker))
  latencies.sort((a, b) => a - b)
  const at = (q: number) =>
    Math.round(
      latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]! * 10,
    ) / 10
  return {
    reports: hosts,
    changed,
    unchanged: hosts - changed - errors,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    wallSeconds: Math.round((performance.now() - start) / 10) / 100,
    maxLagMs: Math.round(maxLagMs),
    latencyMs: { p50: at(0.5), p99: at(0.99), max: at(1) },
  }
}
