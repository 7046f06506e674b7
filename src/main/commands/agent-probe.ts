/**
 * `cyborg agent probe` (docs/cli.md, docs/drivers.md "What the agent sees"): runs every enabled
 * driver's discovery, health and telemetry on this host with the agent's configuration, without a
 * bus, a database or any write, and returns what the agent would report, with every file and
 * command each driver touched. Each driver gets its own read-only probe (read-only-host-probe.ts)
 * under a per-driver read cache, as the agent's shared one reads each file once per discovery.
 */
import { stat } from 'node:fs/promises'
import path from 'node:path'
import type { Config } from '../../config/config.js'
import { buildSnapshot, discoverAll } from '../../agent/snapshot.js'
import { collectDeviceStats, collectStats, type DriverStatsValues } from '../../agent/telemetry.js'
import { DRIVERS } from '../../drivers/index.js'
import type { DriverFactory, HostProbe } from '../../drivers/driver.js'
import { createCachingHostProbe } from '../../drivers/host-probe/caching-host-probe.js'
import { createFixtureHostProbe } from '../../drivers/host-probe/fixture-host-probe.js'
import { createNodeHostProbe } from '../../drivers/host-probe/node-host-probe.js'
import {
  createReadOnlyHostProbe,
  type HostAccess,
  type ReadOnlyHostProbe,
} from '../../drivers/host-probe/read-only-host-probe.js'
import {
  controlPathAddress,
  type DiscoveredDevice,
  type InventorySnapshot,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import { cleanDeviceSamples, type DeviceSample } from '../../domain/device-telemetry.js'
import { InvalidInputError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { driverOptions, enabledDriverNames } from '../driver-options.js'

/** How one driver's probe went. */
export interface ProbedDriver {
  name: string
  ok: boolean
  deviceCount: number
  durationMs: number
  /** Why its discovery failed (`CODE: message`). */
  error?: string
  /** Its usage figures (`stats()`), when it offers them. */
  stats?: DriverStatsValues
  /** Every file and command it touched, in order. */
  accesses: HostAccess[]
}

/** A device's health as its driver read it, with what the driver read about it. */
export interface ProbedHealth extends ReportedHealth {
  driver: string
  /** `dddd:bb:dd.f` (or `remote:<uuid>`). */
  controlPath: string
  /** The files under its address the driver read, and the commands the driver ran. */
  evidence: string[]
}

export interface ProbeReport {
  host: string
  /** Where the drivers looked: `[agent] host_root`, or the recording replayed. */
  source: { kind: 'host'; root: string } | { kind: 'replay'; dir: string }
  drivers: ProbedDriver[]
  /** The snapshot the agent would report (normalized devices and their hash). */
  inventory: InventorySnapshot
  health: ProbedHealth[]
  telemetry: DeviceSample[]
}

export interface ProbeOptions {
  /** Replay a recording (scripts/record-host.sh) instead of the host. */
  replay?: string
  /** Time limit of each driver's discovery. @default 60000 (the agent's) */
  discoverTimeoutMs?: number
  /** Time limit of each driver's telemetry. @default 5000 (the agent's) */
  statsTimeoutMs?: number
}

/**
 * Probes the host of `config` (or the recording `options.replay`).
 * @throws ConfigError for an unknown driver or a bad driver option; InvalidInputError for a
 *   `--replay` that is not a directory
 */
export async function probeHost(config: Config, options: ProbeOptions = {}): Promise<ProbeReport> {
  const names = enabledDriverNames(config)
  const optionsByDriver = driverOptions(config)
  const host = config.DEFAULT.host
  let base: HostProbe
  let source: ProbeReport['source']
  if (options.replay !== undefined) {
    const dir = path.resolve(options.replay)
    const isDir = await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    )
    if (!isDir)
      throw new InvalidInputError(`--replay ${options.replay}: not a directory`, {
        details: { field: 'replay' },
      })
    base = createFixtureHostProbe(dir)
    source = { kind: 'replay', dir }
  } else {
    base = createNodeHostProbe({ root: config.agent.host_root })
    source = { kind: 'host', root: config.agent.host_root }
  }
  const probes: ReadOnlyHostProbe[] = names.map(() => createReadOnlyHostProbe(base))
  const drivers = names.map((name, i) =>
    (DRIVERS[name] as DriverFactory)(
      { host: createCachingHostProbe(probes[i]!), hostname: host },
      optionsByDriver[name],
    ),
  )
  const signal = new AbortController().signal
  const found = await discoverAll(drivers, {
    signal,
    timeoutMs: options.discoverTimeoutMs ?? 60_000,
  })
  const bounds = { timeoutMs: options.statsTimeoutMs ?? 5000, signal }
  const stats = await Promise.all(drivers.map((d) => collectStats(d, bounds)))
  const samples = await Promise.all(drivers.map((d) => collectDeviceStats(d, bounds)))
  const inventory = buildSnapshot(host, found.devices)
  const report: ProbeReport = {
    host,
    source,
    drivers: found.runs.map((run, i) => {
      const failure = found.failures.find((f) => f.driver === run.driver)
      return {
        name: run.driver,
        ok: run.ok,
        deviceCount: run.deviceCount,
        durationMs: run.durationMs,
        ...(failure ? { error: `${failure.error.code}: ${errorMessage(failure.error)}` } : {}),
        ...(stats[i] ? { stats: stats[i] } : {}),
        accesses: [...probes[i]!.accesses],
      }
    }),
    inventory,
    health: [],
    // As the agent's message has them: one per control path, sorted.
    telemetry: cleanDeviceSamples(samples.flat()),
  }
  report.health = healthOf(report, found.byDriver)
  return report
}

/** Every device's health, with the evidence its driver's accesses give for it. */
function healthOf(
  report: ProbeReport,
  byDriver: ReadonlyMap<string, readonly DiscoveredDevice[]>,
): ProbedHealth[] {
  const out: ProbedHealth[] = []
  for (const driver of report.drivers) {
    for (const device of byDriver.get(driver.name) ?? []) {
      const address = controlPathAddress(device.controlPath)
      const evidence = driver.accesses
        .filter((a) => a.op === 'exec' || a.target.includes(`/${address}/`))
        .map((a) => `${a.op} ${a.target}: ${a.outcome}`)
      const { state, reason } = device.health ?? { state: 'ok' as const }
      out.push({
        driver: driver.name,
        controlPath: address,
        state,
        ...(reason === undefined ? {} : { reason }),
        evidence: [...new Set(evidence)],
      })
    }
  }
  return out.sort((a, b) =>
    a.controlPath < b.controlPath ? -1 : a.controlPath > b.controlPath ? 1 : 0,
  )
}
