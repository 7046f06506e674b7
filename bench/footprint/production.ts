/**
 * The production shape, compiled: `cyborg conductor`, `cyborg api` and `cyborg agent` as separate
 * processes over RabbitMQ (a fresh vhost) and MariaDB (a fresh database). The agent's drivers read
 * the 64-device fixture host of bench/ingest/host-fixture.ts through `[agent] host_root`, discovering every
 * second. Figures: the agent's RSS sampled each second while it discovers, and the API's after
 * 1,000 GETs and 20 s later (idle); each process's event-loop lag from its /metrics.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { scrapeEventLoopLag } from '../support/load.js'
import { DRIVER_OPTIONS, ENABLED_DRIVERS, writeHostFixture } from '../ingest/host-fixture.js'
import { testDialects } from '../../test/support/db.js'
import { testBroker } from '../../test/support/peers/rabbitmq.js'
import { cpuMs, freePort, heapMb, memoryMb, rssMb, startCyborg, until } from './process.js'
import type { Cyborg } from './process.js'
import { issue, readPaths } from './embedded.js'

const printed = (c: Cyborg, pattern: RegExp) => () => Promise.resolve(pattern.test(c.output()))

/** RSS each second for `seconds` s: the largest, the last, and every sample. */
async function sampleRss(pid: number, seconds: number) {
  const samples: number[] = []
  for (let i = 0; i < seconds; i++) {
    await sleep(1000)
    samples.push(rssMb(pid))
  }
  return { maxMb: Math.max(...samples), lastMb: samples.at(-1)!, samples }
}

export async function productionShape(agentSeconds: number) {
  const broker = await testBroker()
  const mariadb = (await testDialects()).find((d) => d.name === 'mysql')
  if (broker.skip || !mariadb || mariadb.skip)
    return { skipped: broker.skip ?? mariadb?.skip ?? 'no MariaDB' }
  const vhost = await broker.createVhost()
  const db = await mariadb.create()
  const base = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-footprint-'))
  const started: Cyborg[] = []
  try {
    const host = path.join(base, 'host')
    const devices = await writeHostFixture(host)
    const [apiPort, agentMetrics, conductorMetrics] = await Promise.all([1, 2, 3].map(freePort))
    const common = {
      CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
      CYBORG_DATABASE__CONNECTION: db.url,
      CYBORG_DEFAULT__PERIODIC_INTERVAL: '1',
    }
    const run = (cmd: string, env: Record<string, string>) => {
      const state = path.join(base, cmd)
      const c = startCyborg('compiled', [cmd], {
        ...common,
        CYBORG_DEFAULT__STATE_PATH: state,
        ...env,
      })
      started.push(c)
      return c
    }
    const conductor = run('conductor', {
      CYBORG_METRICS__LISTEN: `127.0.0.1:${conductorMetrics}`,
    })
    await until(conductor, 60_000, printed(conductor, /cyborg conductor is ready/))
    // One process: the goal is one API process's memory. Unset, `[api] api_workers` forks one
    // worker per core and the pid measured would be the cluster's primary, which serves nothing.
    const api = run('api', { CYBORG_API__PORT: String(apiPort), CYBORG_API__API_WORKERS: '1' })
    const agent = run('agent', {
      CYBORG_DEFAULT__HOST: 'bench-footprint',
      CYBORG_AGENT__HOST_ROOT: host,
      CYBORG_AGENT__ENABLED_DRIVERS: ENABLED_DRIVERS.join(','),
      CYBORG_PCI__DEVICE_SPEC: DRIVER_OPTIONS.pci.device_spec,
      CYBORG_METRICS__LISTEN: `127.0.0.1:${agentMetrics}`,
    })
    const url = `http://127.0.0.1:${apiPort}`
    await until(api, 60_000, async () => {
      const body = (await (await fetch(`${url}/v2/devices`)).json()) as { devices?: unknown[] }
      return body.devices?.length === devices
    })
    const agentLagUrl = `http://127.0.0.1:${agentMetrics}/metrics`
    await scrapeEventLoopLag(agentLagUrl)
    const agentRss = await sampleRss(agent.pid(), agentSeconds)
    const agentLag = await scrapeEventLoopLag(agentLagUrl)
    const reports = (agent.output().match(/"msg":"inventory reported"/g) ?? []).length
    const apiAtReadyMb = rssMb(api.pid())
    await scrapeEventLoopLag(`${url}/metrics`)
    const apiCpuBefore = cpuMs(api.pid())
    const failed = await issue(url, await readPaths(url), 1000)
    const apiCpuForRequests = cpuMs(api.pid()) - apiCpuBefore
    const apiLag = await scrapeEventLoopLag(`${url}/metrics`)
    await sleep(1000)
    const apiAfterRequests = {
      rssMb: rssMb(api.pid()),
      heapMb: await heapMb(`${url}/metrics`),
      memoryMb: memoryMb(api.pid()),
    }
    // Then idle: the API's idle GC (src/main/idle-gc.ts) looks every 5 s, 10 s or more after its
    // last collection; 20 s on it has run if it will, and its CPU is what the API spent meanwhile.
    const apiCpuBeforeIdle = cpuMs(api.pid())
    await sleep(20_000)
    const apiIdle = {
      rssMb: rssMb(api.pid()),
      cpuMs: cpuMs(api.pid()) - apiCpuBeforeIdle,
      heapMb: await heapMb(`${url}/metrics`),
    }
    return {
      devices,
      agent: {
        rssMb: agentRss,
        changedReportsLogged: reports,
        cpuMs: cpuMs(agent.pid()),
        eventLoopLag: agentLag,
        heapMb: await heapMb(agentLagUrl),
        memoryMb: memoryMb(agent.pid()),
      },
      api: {
        rssAtReadyMb: apiAtReadyMb,
        rssAfterRequestsMb: apiAfterRequests.rssMb,
        requests: 1000,
        failed,
        cpuMsForRequests: apiCpuForRequests,
        eventLoopLag: apiLag,
        heapMb: apiAfterRequests.heapMb,
        memoryMb: apiAfterRequests.memoryMb,
        idle20sAfter: apiIdle,
      },
      conductor: {
        rssMb: rssMb(conductor.pid()),
        memoryMb: memoryMb(conductor.pid()),
        eventLoopLag: await scrapeEventLoopLag(`http://127.0.0.1:${conductorMetrics}/metrics`),
      },
    }
  } finally {
    for (const c of started.reverse()) await c.stop()
    await db.close()
    await vhost.drop()
    await rm(base, { recursive: true, force: true })
  }
}
