/**
 * The conductor's per-device telemetry gauges (issue 16, docs/metrics.md "Device telemetry"). It
 * subscribes to the agents' fanout topic `cyborg.telemetry`, keeps the latest sample of each device
 * in memory (domain/telemetry-store.ts: a host's message replaces its samples, a host silent for
 * three of its periods is dropped) and rebuilds the `cyborg_device_*` gauges from memory before each
 * scrape (`metrics.beforeExpose`); a scrape never reads the database.
 *
 * Gauges are labelled with the device's uuid, type and vendor, which the samples (keyed by control
 * path) do not carry: they come from the database per host, read when a host's message arrives and
 * the host's rows are older than `refreshMs`, or name a control path they lack (at most once per
 * `missRefreshMs`), the hosts of `readBatchMs` in one query. A device removed from the database loses its series at the next read; one that
 * is not there yet has none. Every conductor exports the same gauges: aggregate with `max by (…)`.
 */
import type { MessageBus } from '../bus/bus.js'
import type { ReadDb } from '../db/core/connection.js'
import { listDeviceKeys } from '../db/reads/device-keys.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import {
  createTelemetryStore,
  deviceGaugeSeries,
  type DeviceLabels,
  type TelemetryStoreOptions,
} from '../domain/telemetry-store.js'
import { readAgentTelemetry, TELEMETRY_TOPIC } from '../rpc/agent-rpc.js'

export interface DeviceTelemetryDeps {
  db: ReadDb
  metrics: Metrics
  log: Logger
  /** @default Date.now */
  now?: () => number
}

export interface DeviceTelemetryOptions extends TelemetryStoreOptions {
  /** A host's device rows are read again when older than this at its next message. @default 60000 */
  refreshMs?: number
  /** A sample naming a device the rows lack reads them again, at most this often per host. @default 10000 */
  missRefreshMs?: number
  /** Hosts to read within this long share one query. @default 250 */
  readBatchMs?: number
}

export interface DeviceTelemetry {
  /** Takes one message of `cyborg.telemetry` (anything else is ignored); resolves once its host's rows are read. */
  ingest(message: unknown): Promise<void>
  /** Replaces the per-device gauges with what memory holds now (the `beforeExpose` hook). */
  expose(): void
  /** Forgets every sample (the gauges empty at the next scrape). */
  clear(): void
}

interface HostDevices {
  readAt: number
  byPath: Map<string, DeviceLabels>
}

export function createDeviceTelemetry(
  deps: DeviceTelemetryDeps,
  options: DeviceTelemetryOptions = {},
): DeviceTelemetry {
  const { db, metrics, log, now = Date.now } = deps
  const { refreshMs = 60_000, missRefreshMs = 10_000, readBatchMs = 250, ...storeOptions } = options
  const store = createTelemetryStore(storeOptions)
  const devices = new Map<string, HostDevices>()

  let pending = new Set<string>()
  let batch: Promise<void> | undefined
  /**
   * Reads the device rows of `host` with those of every host asked within `readBatchMs`: one query
   * for many hosts (10,000 agents on a 60 s period make about 170 reads a second; batched, a few
   * queries). Hosts dropped meanwhile are not read; a failure keeps the rows known.
   */
  const read = (host: string): Promise<void> => {
    pending.add(host)
    batch ??= new Promise<void>((resolve) => setTimeout(resolve, readBatchMs).unref()).then(
      async () => {
        const hosts = [...pending].filter((h) => store.has(h))
        pending = new Set()
        batch = undefined
        if (hosts.length === 0) return
        try {
          const keys = await listDeviceKeys(db, hosts)
          const at = now()
          const byHost = new Map(hosts.map((h) => [h, new Map<string, DeviceLabels>()]))
          for (const k of keys)
            byHost
              .get(k.host)
              ?.set(k.controlPath, { device: k.uuid, type: k.type, vendor: k.vendor })
          for (const [h, byPath] of byHost) if (store.has(h)) devices.set(h, { readAt: at, byPath })
        } catch (err) {
          log.warn({ err, hosts: hosts.length }, 'device telemetry: devices not read')
        }
      },
    )
    return batch
  }

  return {
    async ingest(message) {
      const m = readAgentTelemetry(message)
      if (!m) return
      const at = now()
      store.put(m.host, m.devices, {
        receivedAt: at,
        ...(m.periodMs === undefined ? {} : { periodMs: m.periodMs }),
        ...(m.time === undefined ? {} : { time: m.time }),
      })
      if (m.devices.length === 0) {
        devices.delete(m.host)
        return
      }
      const known = devices.get(m.host)
      const age = known === undefined ? Infinity : at - known.readAt
      const miss = known !== undefined && m.devices.some((d) => !known.byPath.has(d.controlPath))
      if (age >= refreshMs || (miss && age >= missRefreshMs)) await read(m.host)
    },
    expose() {
      for (const host of store.prune(now())) devices.delete(host)
      const series = deviceGaugeSeries(store.samples(now()), (host, path) =>
        devices.get(host)?.byPath.get(path),
      )
      for (const { name, series: s } of series) metrics.replace(name, s)
    },
    clear() {
      store.clear()
      devices.clear()
    },
  }
}

/**
 * Subscribes a {@link DeviceTelemetry} to `cyborg.telemetry` and hooks it before each exposition;
 * `stop()` unsubscribes and empties it (the hook then gives no series).
 */
export async function startDeviceGauges(
  deps: DeviceTelemetryDeps & { bus: Pick<MessageBus, 'subscribe'> },
  options: DeviceTelemetryOptions = {},
): Promise<{ telemetry: DeviceTelemetry; stop(): Promise<void> }> {
  const telemetry = createDeviceTelemetry(deps, options)
  deps.metrics.beforeExpose(() => telemetry.expose())
  const subscription = await deps.bus.subscribe(TELEMETRY_TOPIC, (m) => telemetry.ingest(m))
  return {
    telemetry,
    async stop() {
      await subscription.unsubscribe()
      telemetry.clear()
    },
  }
}
