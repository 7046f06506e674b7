/**
 * The two sides of bench/quota.ts: one real Keystone (scripts/keystone.sh) with the accelerator
 * service, a registered limit for `class:FPGA` too high to refuse anything, and one project; then,
 * per database, a conductor without quota (`noop`) and one with `[quota] driver = unified_limits`
 * (cache_seconds = 60, the default), each on its own fresh database with the storm host's TEST_PCI
 * handles (a standalone bind completes in its transaction, no agent) and a one-FPGA profile.
 * The workload: `concurrency` workers, each looping createArqs → standalone bindArqs → deleteArqs
 * by instance, for `seconds`.
 */
import { performance } from 'node:perf_hooks'
import { loadavg } from 'node:os'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { LimitSource } from '../../src/domain/quota.js'
import { keystoneSettings } from '../../src/openstack/service-auth.js'
import { createUnifiedLimits } from '../../src/openstack/unified-limits.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import type { TestDatabase, TestDialect } from '../../test/support/db.js'
import {
  ADMIN_PASSWORD,
  startKeystone,
  type RunningKeystone,
} from '../../test/support/peers/keystone.js'
import { STORM_HOST, stormDevices } from '../../test/support/storm-inventory.js'
import { percentiles, round2 } from '../events/events-sinks.js'

export type SideName = 'noop' | 'unified_limits'

/** The Keystone of the run: where it is, its project, and how to reach it as oslo.limit would. */
export interface QuotaKeystone {
  ks: RunningKeystone
  projectId: string
  /** A fresh LimitSource (its own cache) for `[quota] cache_seconds` = cacheMs / 1000. */
  limits(cacheMs: number): LimitSource
}

/** Starts Keystone and registers the service, a registered limit of `defaultLimit`, a project. */
export async function startQuotaKeystone(defaultLimit: number): Promise<QuotaKeystone> {
  const ks = await startKeystone()
  try {
    const serviceId = await ks.registerEndpoint('accelerator', 'cyborg', 'http://127.0.0.1:6666/v2')
    const res = await fetch(`${ks.url}/registered_limits`, {
      method: 'POST',
      headers: { 'x-auth-token': await ks.adminToken(), 'content-type': 'application/json' },
      body: JSON.stringify({
        registered_limits: [
          { service_id: serviceId, resource_name: 'class:FPGA', default_limit: defaultLimit },
        ],
      }),
    })
    if (!res.ok) throw new Error(`registered limit: ${res.status} ${await res.text()}`)
    const projectId = await ks.createProject(`bench-quota-${Date.now().toString(36)}`)
    const settings = keystoneSettings(
      'oslo_limit',
      {
        auth_type: 'password',
        auth_url: ks.url,
        username: 'admin',
        password: ADMIN_PASSWORD,
        system_scope: 'all',
        user_domain_name: 'Default',
        project_domain_name: 'Default',
        timeout: 30,
      },
      'identity',
    )!
    return {
      ks,
      projectId,
      limits: (cacheMs) => createUnifiedLimits({ settings, serviceType: 'accelerator', cacheMs }),
    }
  } catch (err) {
    await ks.stop()
    throw err
  }
}

/** How often the limits were asked for, and how long the slowest answer took (a Keystone trip). */
export interface LookupStats {
  calls: number
  maxMs: number
  /** Answers that took ≥ 1 ms: most likely Keystone, not the cache. */
  slow: number
}

export interface Side {
  name: SideName
  conductor: Conductor
  db: TestDatabase
  lookups: LookupStats | undefined
  close(): Promise<void>
}

/** LimitSource `inner`, counted. */
function counted(inner: LimitSource, stats: LookupStats): LimitSource {
  return {
    async limitsOf(p) {
      const t0 = performance.now()
      try {
        return await inner.limitsOf(p)
      } finally {
        const ms = performance.now() - t0
        stats.calls++
        if (ms >= 1) stats.slow++
        stats.maxMs = Math.max(stats.maxMs, round2(ms))
      }
    },
  }
}

/** A side on a fresh database of `dialect`: its conductor (production's conductor defaults), seeded. */
export async function createSide(
  name: SideName,
  dialect: TestDialect,
  handles: number,
  quota: LimitSource | undefined,
): Promise<Side> {
  const db = await dialect.create()
  const lookups = quota ? { calls: 0, maxMs: 0, slow: 0 } : undefined
  let conductor: Conductor | undefined
  try {
    conductor = createConductor(
      {
        db,
        log: noopLogger,
        clock: { now: () => new Date() },
        ...(quota ? { quota: counted(quota, lookups!) } : {}),
      },
      // [conductor] save_interval_ms = 2, max_batch = 64: the configuration's defaults.
      { saveIntervalMs: 2, maxBatch: 64 },
    )
    const perDevice = 16
    const list = stormDevices(Math.ceil(handles / perDevice), perDevice)
    await conductor.reportInventory({
      host: STORM_HOST,
      hash: inventoryHash(list),
      devices: list,
      autoActivate: true,
    })
    await conductor.createDeviceProfile({
      name: 'one',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
  } catch (err) {
    await conductor?.stop()
    await db.close()
    throw err
  }
  const c = conductor
  return {
    name,
    conductor: c,
    db,
    lookups,
    async close() {
      await c.stop()
      await db.close()
    },
  }
}

let instances = 0
const nextInstance = () => `9b0c0000-0000-4000-8000-${(instances++).toString(16).padStart(12, '0')}`

export interface RoundFigures {
  bindsPerSecond: number
  binds: number
  bindFailed: number
  errors: Record<string, number>
  seconds: number
  bindLatencyMs: { p50: number | null; p99: number | null; max: number | null }
  /** This process's CPU (user + system) per bind, µs: the conductor and the database client. */
  processCpuUsPerBind: number | null
  loadAverage1m: number
}

/** `concurrency` workers cycling create → standalone bind → delete on `side` for `seconds`. */
export async function workload(
  side: Side,
  projectId: string,
  concurrency: number,
  seconds: number,
): Promise<RoundFigures> {
  const c = side.conductor
  const latencies: number[] = []
  const errors: Record<string, number> = {}
  let binds = 0
  let bindFailed = 0
  const load1m = round2(loadavg()[0]!)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const deadline = t0 + seconds * 1000
  const worker = async () => {
    while (performance.now() < deadline) {
      const instanceUuid = nextInstance()
      try {
        const [arq] = await c.createArqs({ deviceProfileName: 'one', projectId, maxArqs: 1 })
        const b0 = performance.now()
        const [out] = await c.bindArqs({
          bindings: { [arq!.uuid]: { hostname: STORM_HOST, instanceUuid, projectId } },
        })
        latencies.push(performance.now() - b0)
        if (out!.state === 'Bound') binds++
        else bindFailed++
        await c.deleteArqs({ instanceUuid, projectId })
      } catch (err) {
        const code = (err as { code?: string }).code ?? (err as Error).message.slice(0, 80)
        errors[code] = (errors[code] ?? 0) + 1
        await c.deleteArqs({ instanceUuid, projectId }).catch(() => {})
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const elapsed = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return {
    bindsPerSecond: round2(binds / elapsed),
    binds,
    bindFailed,
    errors,
    seconds: round2(elapsed),
    bindLatencyMs: percentiles(latencies),
    processCpuUsPerBind: binds === 0 ? null : Math.round((cpu.user + cpu.system) / binds),
    loadAverage1m: load1m,
  }
}
