/**
 * Placement calls per report: one conductor (PostgreSQL) keeps a real Placement (Debian's
 * placement-api, scripts/placement.sh) in step for `--hosts` simulated hosts, through a counting
 * HTTP endpoint in front of it. Like real agents, each host's report names its compute node
 * provider (resolved by the agent at start; registered here beforehand, as Nova would).
 * Rounds: every host's first report; the same reports again (unchanged); then 1 % of the hosts
 * with a firmware change (no Placement effect), a resized deployable, and a removed device.
 * Usage: node --import tsx bench/ingest-placement.ts [--hosts 200] [--devices 8]
 */
import { execFile } from 'node:child_process'
import { createServer, request } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { createConductor } from '../src/conductor/conductor.js'
import { testDialects } from '../test/support/db.js'
import { sampleDevice } from '../test/support/sample-inventory.js'
import { noopLogger } from '../src/domain/logger.js'
import { systemClock } from '../src/domain/time.js'
import { createPlacementClient } from '../src/openstack/placement.js'
import { rootProviderUuid } from '../src/openstack/root-provider.js'
import { inventoryHash } from '../src/rpc/inventory-hash.js'
import { freePort, ROOT } from '../test/support/service.js'
import { eventLoopLag } from './support/load.js'

const { values } = parseArgs({
  options: { hosts: { type: 'string', default: '200' }, devices: { type: 'string', default: '8' } },
})
const hosts = Number(values.hosts)
const perHost = Number(values.devices)
const run = promisify(execFile)

/** A pass-through HTTP endpoint that counts requests by method and path shape. */
async function countingProxy(target: URL) {
  const counts = new Map<string, number>()
  const server = createServer((req, res) => {
    const shape = `${req.method} ${(req.url ?? '').replace(/[0-9a-f-]{36}/g, '{uuid}').replace(/\?.*/, '?…')}`
    counts.set(shape, (counts.get(shape) ?? 0) + 1)
    const up = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    up.on('error', () => res.writeHead(502).end())
    req.pipe(up)
  })
  const port = await freePort()
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () => new Promise((r) => server.close(r)),
  }
}

const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-placement-'))
const script = path.join(ROOT, 'scripts/placement.sh')
const placementUrl = (await run('bash', [script, 'up', dir, String(await freePort())])).stdout
  .trim()
  .split('\n')
  .pop()!
const proxy = await countingProxy(new URL(placementUrl))
const postgres = (await testDialects()).find((d) => d.name === 'postgres')!
if (postgres.skip) throw new Error(`PostgreSQL: ${postgres.skip}`)
const db = await postgres.create()
const lag = eventLoopLag()
try {
  const direct = createPlacementClient({
    endpoint: placementUrl,
    token: 'admin',
    timeoutMs: 30_000,
  })
  const client = createPlacementClient({ endpoint: proxy.url, token: 'admin', timeoutMs: 30_000 })
  const conductor = createConductor(
    { db, log: noopLogger, clock: systemClock, placement: { client, createRootProvider: false } },
    { saveIntervalMs: 2 },
  )
  const name = (i: number) => `bench-${String(i).padStart(5, '0')}`
  for (let i = 0; i < hosts; i++)
    await direct.createProvider({ uuid: rootProviderUuid(name(i)), name: name(i) })
  const report = (
    i: number,
    devices = Array.from({ length: perHost }, (_, n) => sampleDevice(name(i), n)),
  ) => ({
    host: name(i),
    hash: inventoryHash(devices),
    devices,
    autoActivate: true,
    resourceProvider: { name: name(i), uuid: rootProviderUuid(name(i)) },
  })

  /** Runs `reports` 8 at a time; returns calls per report, by shape. */
  const round = async (label: string, reports: ReturnType<typeof report>[]) => {
    proxy.counts.clear()
    const started = performance.now()
    for (let k = 0; k < reports.length; k += 8)
      await Promise.all(reports.slice(k, k + 8).map((r) => conductor.reportInventory(r)))
    const seconds = (performance.now() - started) / 1000
    const total = [...proxy.counts.values()].reduce((a, b) => a + b, 0)
    return {
      round: label,
      reports: reports.length,
      placementCalls: total,
      callsPerReport: Math.round((total / reports.length) * 100) / 100,
      byCall: Object.fromEntries([...proxy.counts].sort()),
      reportsPerSecond: Math.round(reports.length / seconds),
    }
  }
  const all = Array.from({ length: hosts }, (_, i) => i)
  const changed = all.filter((i) => i % 100 === 0)
  const results = [
    await round(
      'new hosts (first report)',
      all.map((i) => report(i)),
    ),
    await round(
      'unchanged',
      all.map((i) => report(i)),
    ),
    await round(
      'firmware changed (1 %)',
      changed.map((i) => {
        const devices = Array.from({ length: perHost }, (_, n) => sampleDevice(name(i), n))
        devices[0]!.vendorBoardInfo = { firmware: 'v2' }
        return report(i, devices)
      }),
    ),
    await round(
      'one deployable resized (1 %)',
      changed.map((i) => {
        const devices = Array.from({ length: perHost }, (_, n) =>
          sampleDevice(name(i), n, n === 1 ? { numAccelerators: 1 } : {}),
        )
        return report(i, devices)
      }),
    ),
    await round(
      'one device removed (1 %)',
      changed.map((i) => {
        const devices = Array.from({ length: perHost - 1 }, (_, n) =>
          sampleDevice(name(i), n, n === 1 ? { numAccelerators: 1 } : {}),
        )
        return report(i, devices)
      }),
    ),
  ]
  await conductor.stop()
  const [first, unchanged] = results
  console.log(
    JSON.stringify(
      {
        benchmark: 'ingest-placement',
        eventLoopLag: {
          benchmarkProcess: lag(),
          services:
            'the conductor is embedded in the benchmark process; Placement is Python (uwsgi)',
        },
        date: new Date().toISOString(),
        settings: {
          hosts,
          devicesPerHost: perHost,
          placement: 'placement-api 8.0.0 (Debian), noauth2, SQLite, 1 uwsgi thread',
          database: 'postgresql',
        },
        results,
        goals: {
          unchangedReportCalls: {
            goal: 0,
            measured: unchanged!.callsPerReport,
            met: unchanged!.callsPerReport === 0,
          },
          newHostWith8Deployables: {
            goal: '≤ 12',
            measured: first!.callsPerReport,
            met: first!.callsPerReport <= 12,
          },
        },
      },
      null,
      2,
    ),
  )
} finally {
  await proxy.close()
  await db.close()
  await run('bash', [script, 'down', dir]).catch(() => {})
  await rm(dir, { recursive: true, force: true })
}
