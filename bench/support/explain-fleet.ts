/**
 * The fleet and the API process of bench/explain.ts.
 *
 * seedFleet: `hosts` × `perHost` devices of one deployable each (test/support/sample-inventory.ts:
 * PGPU and FPGA alternate, 2 attach handles each), ingested the conductor's way (ingestSnapshot, one
 * transaction per host, a few hosts at a time), varied so that every explain rule has work:
 * - traits: FPGAs are CUSTOM_FPGA_INTEL, every other one CUSTOM_FPGA_XILINX (required_trait);
 *   the first PGPU of a host also carries CUSTOM_GPU_HBM (two-trait sets for capacity);
 * - 1 host in 20 reported without auto-activation (lifecycle: inactive);
 * - 1 host in 25 has its FPGAs `maintaining` (status);
 * - 1 host in 50 reports its second device `failed` (health);
 * - every host's agent has a services row; 1 in 100 last beat two days ago (lease);
 * - 1 host in 4 has both handles of its first PGPU in use (no_free_handle), 1 in 4 one handle of
 *   its first FPGA.
 * serveApi: the API alone (startHttpApi, as `cyborg api` builds it: the configured auth strategy,
 * noauth by default, the default policy) over the database, with a conductor stub (these routes
 * only read), in its own process, so that its CPU is its own.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/core/schema.js'
import { createDeviceProfile } from '../../src/db/device-profiles.js'
import { AGENT_BINARY } from '../../src/db/service-rows.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleDevice } from '../../test/support/sample-inventory.js'
import { throwingConductor } from '../../test/support/api-app.js'
import { NODE, ROOT, freePort } from '../../test/support/service.js'
import { buildSnapshot } from '../../src/agent/snapshot.js'
import { loadConfig } from '../../src/config/config.js'
import { openConfiguredDatabase } from '../../src/main/database.js'
import { startHttpApi } from '../../src/main/http.js'
import { createLogger } from '../../src/main/logger.js'
import { formatTimestamp } from '../../src/domain/time.js'

export const hostName = (i: number) => `explain-host-${String(i).padStart(5, '0')}`
/** The deployable of device `n` on `host` (sampleDevice's naming: bus 0x10 + n). */
const deployableName = (host: string, n: number) =>
  `${host}_0000:${(0x10 + n).toString(16).padStart(2, '0')}:00.0`

/** The 2-group profile explained: an Intel FPGA (required trait), and any PGPU. */
export const PROFILE_GROUPS: Record<string, string>[] = [
  { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required' },
  { 'resources:PGPU': '1' },
]

function hostSnapshot(i: number, perHost: number) {
  const host = hostName(i)
  const devices = Array.from({ length: perHost }, (_, n) => {
    const d = sampleDevice(host, n)
    const attrs = d.deployables[0]!.attributes
    if (n % 4 === 3) attrs[1] = { key: 'trait0', value: 'CUSTOM_FPGA_XILINX' }
    if (n === 0) attrs.push({ key: 'trait1', value: 'CUSTOM_GPU_HBM' })
    if (n === 1 && i % 50 === 7)
      d.health = { state: 'failed', reason: '2 uncorrectable ECC errors' }
    return d
  })
  return buildSnapshot(host, devices)
}

const chunks = <T>(xs: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(xs.length / size) }, (_, k) => xs.slice(k * size, (k + 1) * size))

/** Fills an empty, migrated database; resolves with what it made and how long it took. */
export async function seedFleet(
  db: Kysely<Database>,
  { hosts, perHost, parallel = 4 }: { hosts: number; perHost: number; parallel?: number },
) {
  const start = performance.now()
  const now = formatTimestamp(new Date())
  const longAgo = formatTimestamp(new Date(Date.now() - 2 * 86_400_000))
  let next = 0
  const worker = async () => {
    while (next < hosts) {
      const i = next++
      await db
        .transaction()
        .execute((trx) =>
          ingestSnapshot(trx, hostSnapshot(i, perHost), { autoActivate: i % 20 !== 19, now }),
        )
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker))
  const ingestSeconds = (performance.now() - start) / 1000

  const all = Array.from({ length: hosts }, (_, i) => i)
  const pick = (f: (i: number) => boolean) => all.filter(f).map(hostName)
  for (const batch of chunks(all, 500)) {
    await db
      .insertInto('services')
      .values(
        batch.map((i) => ({
          host: hostName(i),
          binary: AGENT_BINARY,
          version: 'bench',
          report_hash: null,
          last_seen: i % 100 === 42 ? longAgo : now,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute()
  }
  for (const batch of chunks(
    pick((i) => i % 25 === 3),
    500,
  )) {
    await db
      .updateTable('devices')
      .set({ status: 'maintaining', updated_at: now })
      .where('hostname', 'in', batch)
      .where('type', '=', 'FPGA')
      .execute()
  }
  const names = (f: (i: number) => boolean, n: number) => pick(f).map((h) => deployableName(h, n))
  for (const batch of chunks(
    names((i) => i % 4 === 0, 0),
    500,
  )) {
    await db
      .updateTable('attach_handles')
      .set({ in_use: 1, updated_at: now })
      .where('deployable_id', 'in', (q) =>
        q.selectFrom('deployables').select('id').where('name', 'in', batch),
      )
      .execute()
  }
  for (const batch of chunks(
    names((i) => i % 4 === 1, 1),
    500,
  )) {
    await db
      .updateTable('attach_handles')
      .set({ in_use: 1, updated_at: now })
      .where('id', 'in', (q) =>
        q
          .selectFrom('attach_handles as h')
          .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
          .select(sql<number>`min(h.id)`.as('id'))
          .where('p.name', 'in', batch)
          .groupBy('p.id'),
      )
      .execute()
  }
  await sql`analyze`.execute(db)
  const count = async (table: 'devices' | 'deployables' | 'attributes' | 'attach_handles') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select(sql<string>`count(*)`.as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
  const profile = await createDeviceProfile(
    db,
    { uuid: randomUUID(), name: 'bench-explain-2g', description: null, groups: PROFILE_GROUPS },
    now,
  )
  return {
    hosts,
    perHost,
    rows: {
      devices: await count('devices'),
      deployables: await count('deployables'),
      attributes: await count('attributes'),
      attachHandles: await count('attach_handles'),
    },
    ingestSeconds: Math.round(ingestSeconds * 10) / 10,
    setupSeconds: Math.round((performance.now() - start) / 100) / 10,
    profile: { uuid: profile.uuid, name: profile.name, groups: PROFILE_GROUPS },
    hostsWith: {
      inactive: pick((i) => i % 20 === 19).length,
      maintainingFpgas: pick((i) => i % 25 === 3).length,
      failedDevice: pick((i) => i % 50 === 7).length,
      agentPastLease: pick((i) => i % 100 === 42).length,
      pgpuAllHandlesInUse: pick((i) => i % 4 === 0).length,
      fpgaOneHandleInUse: pick((i) => i % 4 === 1).length,
    },
  }
}

/** The env of the API process: leases of a day, so that no agent falls silent mid-run. */
const apiEnv = (dbUrl: string, port: number) => ({
  CYBORG_DATABASE__CONNECTION: dbUrl,
  CYBORG_API__HOST_IP: '127.0.0.1',
  CYBORG_API__PORT: String(port),
  CYBORG_LOG_LEVEL: 'warn',
  CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
  // The default 0 keeps reads only while nothing was committed; --fleet-cache-ms sets the opt-in.
  CYBORG_API__FLEET_CACHE_MS: process.env.BENCH_FLEET_CACHE_MS ?? '0',
})

/** The child's side (`explain.ts --serve <db url> <port>`): prints "ready <url>", stops on SIGTERM. */
export async function serveApi(dbUrl: string, port: number): Promise<void> {
  const env = apiEnv(dbUrl, port)
  const config = loadConfig({ files: [], env })
  const log = createLogger(config, { service: 'bench-explain-api', env })
  const db = await openConfiguredDatabase(config)
  const api = await startHttpApi(config, { db, conductor: throwingConductor(), log })
  process.stdout.write(`ready ${api.url}\n`)
  process.on('SIGTERM', () => {
    void api.app
      .close()
      .then(() => db.close())
      .then(() => process.exit(0))
  })
}

export interface ApiProcess {
  url: string
  pid: number | undefined
  stop(): Promise<void>
}

/** Starts `bench/explain.ts --serve` on a free port against `dbUrl`; resolves once it listens. */
export async function startApi(dbUrl: string): Promise<ApiProcess> {
  const port = await freePort()
  const child = spawn(
    NODE,
    [
      // e.g. BENCH_API_NODE_ARGS=--cpu-prof to profile the API process alone.
      ...(process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
      '--import',
      'tsx',
      path.join(ROOT, 'bench/explain.ts'),
      '--serve',
      dbUrl,
      String(port),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      const m = /ready (\S+)/.exec(d.toString())
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`API process exited with ${code}`)))
  })
  return {
    url,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    },
  }
}
