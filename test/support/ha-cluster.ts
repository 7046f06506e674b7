/**
 * The high-availability deployment of issue 30, shared by test/cluster/faults.cluster.ts and
 * bench/cluster.ts: a 3-node MariaDB Galera cluster (scripts/galera.sh, base port 3430 unless
 * CYBORG_TEST_GALERA_BASE_PORT) and a 3-node RabbitMQ cluster (scripts/rabbitmq-cluster.sh, 5721 unless
 * CYBORG_TEST_RABBIT_CLUSTER_PORT), both in private directories, and on them `cyborg api` and
 * `cyborg conductor` processes, each listing the nodes from a different one (Galera in `[database]
 * connection`, RabbitMQ in `transport_url`), with quorum queues. The storm host (STORM_HOST, TEST_PCI
 * handles) is seeded and its stand-in agent cleans released units; with `placementUrl` every
 * process keeps a real Placement in step. A deployment may also run on one
 * MariaDB (the machine's 3306, a fresh database) for a benchmark's baseline.
 */
import { execFile } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { sql } from 'kysely'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { serveStormCleanAgent, type StormCleanAgent } from '../../bench/storm/storm-clean-agent.js'
import {
  freePort,
  printed,
  ROOT,
  runCommand,
  startService,
  type RunningService,
} from './service.js'
import { seedStorm, stormDevices } from './storm-inventory.js'

export const GALERA_BASE = Number(process.env.CYBORG_TEST_GALERA_BASE_PORT ?? 3430)
export const RABBIT_PORT = Number(process.env.CYBORG_TEST_RABBIT_CLUSTER_PORT ?? 5721)
export const NODES = [1, 2, 3] as const
const STORM = { devices: 2, handles: 64 }
/** How long one process may take to start (tsx compiles the sources; other work shares the cores). */
const START_MS = 240_000

/** Why this machine cannot run the clusters (not root, a server missing), or undefined. */
export function haCannotRun(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (the nodes run as the mysql and rabbitmq users)'
  if (!existsSync('/usr/lib/rabbitmq/bin/rabbitmq-server'))
    return 'rabbitmq-server is not installed'
  if (!existsSync('/usr/lib/galera/libgalera_smm.so')) return 'galera-4 is not installed'
  if (!existsSync('/usr/sbin/mariadbd')) return 'mariadb-server is not installed'
  return undefined
}

function script(name: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      'bash',
      [`${ROOT}/scripts/${name}`, ...args],
      { timeout: 300_000, env: { ...process.env, ...env } },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`${name} ${args.join(' ')}: ${stderr || err.message}`))
          : resolve(stdout),
    ),
  )
}

/** The two clusters' scripts, on their directories and ports. */
export interface Clusters {
  /** `host:port` of Galera node n's SQL port. */
  galeraNode(n: number): string
  /** `host:port` of RabbitMQ node n's AMQP port. */
  rabbitNode(n: number): string
  galera(action: 'kill' | 'start', n: number): Promise<string>
  rabbit(action: 'stop' | 'start' | 'kill', n: number): Promise<string>
  /** The process ids of the running Galera nodes (for their CPU time). */
  galeraPids(): number[]
  down(): Promise<void>
}

/** Starts (or finds running) both clusters under `dir` (galera/ and mq/). */
export async function startClusters(dir: string): Promise<Clusters> {
  mkdirSync(dir, { recursive: true })
  chmodSync(dir, 0o755) // the mysql and rabbitmq users reach their node directories through it
  const g = `${dir}/galera`
  const mq = `${dir}/mq`
  const genv = { GALERA_BASE_PORT: String(GALERA_BASE) }
  const ups = await Promise.allSettled([
    script('galera.sh', ['up', g], genv),
    script('rabbitmq-cluster.sh', ['up', mq, String(RABBIT_PORT)]),
  ])
  const failed = ups.find((u) => u.status === 'rejected')
  if (failed) {
    // The one that came up goes too: left running, it would hold its ports for the next run.
    await Promise.allSettled([
      script('galera.sh', ['down', g], genv),
      script('rabbitmq-cluster.sh', ['down', mq]),
    ])
    throw failed.reason
  }
  return {
    galeraNode: (n) => `127.0.0.1:${GALERA_BASE + n}`,
    rabbitNode: (n) => `127.0.0.1:${RABBIT_PORT + n - 1}`,
    galera: (action, n) => script('galera.sh', [action, g, String(n)], genv),
    rabbit: (action, n) => script('rabbitmq-cluster.sh', [action, mq, String(n)]),
    galeraPids: () =>
      NODES.map((n) => `${g}/node${n}/mariadbd.pid`)
        .filter((f) => existsSync(f))
        .map((f) => Number(readFileSync(f, 'utf8').trim())),
    async down() {
      await Promise.allSettled([
        script('galera.sh', ['down', g], genv),
        script('rabbitmq-cluster.sh', ['down', mq]),
      ])
    },
  }
}

/** The nodes from the i-th one on (i counted from 0), wrapping: process i lists them rotated. */
export const rotated = (i: number): number[] => NODES.map((_, k) => NODES[(i + k) % NODES.length]!)

export interface HaOptions {
  /** 'galera': process i lists the Galera nodes rotated by i; 'single': the machine's 3306. */
  database: 'galera' | 'single'
  /** A fresh database of this name is created (dropped first). */
  name: string
  conductors?: number
  apis?: number
  bindTimeoutS?: number
  rpcTimeoutS?: number
  /** A real Placement's URL (test/support/peers/placement.ts): every process gets `[placement]`. */
  placementUrl?: string
}

export interface HaDeployment {
  apiUrls: string[]
  /** The APIs' process ids (for their CPU time). */
  apiPids: number[]
  conductors: (RunningService | undefined)[]
  /** The `[database] connection` process i gets (i: conductors first, then APIs). */
  connection(i: number): string
  /** One handle per Galera node (or the one MariaDB), for reads straight from that node. */
  nodeDbs: DatabaseHandle[]
  /** kill -9 of conductor i; resolves once it is gone. */
  killConductor(i: number): Promise<void>
  /** Starts conductor i (again), with its connection. */
  startConductor(i: number): Promise<void>
  /** The error lines (pino level 50 and up) every process of the deployment printed so far. */
  errorLines(): string[]
  /** `[metrics] listen` URL of conductor i (its Prometheus text at /metrics). */
  metricsUrl(i: number): string
  stop(): Promise<void>
}

const quiet = { CYBORG_LOG_LEVEL: 'warn' }

/** `[placement]` for a loopback Placement that takes the admin token, with the hosts' root providers made by us. */
const placementEnv = (url: string): Record<string, string> => ({
  CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: url,
  CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
  CYBORG_PLACEMENT__TOKEN: 'admin',
  CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
})

/** Creates database `name` afresh through `url` (a server URL ending in /mysql). */
async function freshDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = await openDatabase(serverUrl)
  try {
    await sql.raw(`DROP DATABASE IF EXISTS ${name}`).execute(admin.db)
    await sql.raw(`CREATE DATABASE ${name}`).execute(admin.db)
  } finally {
    await admin.close()
  }
}

/** Starts the processes of a deployment on `clusters` (whose RabbitMQ is used in both shapes). */
export async function startHa(clusters: Clusters, options: HaOptions): Promise<HaDeployment> {
  const { conductors = 2, apis = 2, bindTimeoutS = 10, rpcTimeoutS = 5, name } = options
  const hostList = (i: number) =>
    options.database === 'single'
      ? '127.0.0.1:3306'
      : rotated(i)
          .map((n) => clusters.galeraNode(n))
          .join(',')
  const connection = (i: number) => `mysql+pymysql://root@${hostList(i)}/${name}`
  const transport = (i: number) =>
    `rabbit://${rotated(i)
      .map((n) => `guest:guest@${clusters.rabbitNode(n)}`)
      .join(',')}/`
  await freshDatabase(`mysql://root@${hostList(0).split(',')[0]}/mysql`, name)
  const metricsPorts = await Promise.all(Array.from({ length: conductors }, () => freePort()))
  const env = (i: number): Record<string, string> => ({
    CYBORG_DATABASE__CONNECTION: connection(i),
    CYBORG_DEFAULT__TRANSPORT_URL: transport(i),
    CYBORG_OSLO_MESSAGING_RABBIT__RABBIT_QUORUM_QUEUE: 'true',
    CYBORG_DEFAULT__BIND_TIMEOUT: String(bindTimeoutS),
    CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: String(rpcTimeoutS),
    // The storm host is seeded without an agent's heartbeat: give its lease a day (issue 15).
    CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
    ...(options.placementUrl === undefined ? {} : placementEnv(options.placementUrl)),
    ...quiet,
  })
  const sync = await runCommand(['db', 'sync'], env(0))
  if (sync.code !== 0) throw new Error(`db sync: ${sync.output}`)
  const running: RunningService[] = []
  const conductorList: (RunningService | undefined)[] = []
  const startConductor = async (i: number) => {
    const s = await startService({
      command: ['conductor'],
      env: {
        ...env(i),
        CYBORG_LOG_LEVEL: 'info',
        CYBORG_METRICS__LISTEN: `127.0.0.1:${metricsPorts[i]}`,
      },
      ready: printed(/cyborg conductor is ready/),
      timeoutMs: START_MS,
    })
    running.push(s)
    conductorList[i] = s
  }
  const apiList: RunningService[] = []
  const startApi = async (a: number) => {
    const s = await startService({
      command: ['api'],
      env: { ...env(conductors + a), CYBORG_LOG_LEVEL: 'info' },
      timeoutMs: START_MS,
    })
    running.push(s)
    apiList[a] = s
  }
  let bus: MessageBus | undefined
  let agent: StormCleanAgent | undefined
  try {
    // All at once: on a loaded 2-core machine each start (tsx) takes tens of seconds.
    const starts = await Promise.allSettled([
      ...Array.from({ length: conductors }, (_, i) => startConductor(i)),
      ...Array.from({ length: apis }, (_, a) => startApi(a)),
    ])
    for (const r of starts) if (r.status === 'rejected') throw r.reason
    bus = await createRabbitMqBus({ url: transport(0), quorumQueues: true })
    await seedStorm(createConductorClient(bus, { timeoutMs: 30_000 }), STORM.devices, STORM.handles)
    agent = await serveStormCleanAgent(bus, { devices: stormDevices(STORM.devices, STORM.handles) })
  } catch (err) {
    // Whatever started goes: a child left running would keep the test file from ending.
    await Promise.allSettled(running.map((s) => s.stop()))
    await bus?.close()
    throw err
  }
  const nodeUrls =
    options.database === 'single'
      ? [connection(0)]
      : NODES.map((n) => `mysql+pymysql://root@${clusters.galeraNode(n)}/${name}`)
  const nodeDbs = await Promise.all(nodeUrls.map((u) => openDatabase(u)))
  return {
    apiUrls: apiList.map((s) => s.url),
    apiPids: apiList.map((s) => s.child.pid ?? 0),
    conductors: conductorList,
    connection,
    nodeDbs,
    async killConductor(i) {
      const s = conductorList[i]
      if (!s || s.child.exitCode !== null) return
      const gone = new Promise((r) => s.child.once('exit', r))
      s.child.kill('SIGKILL')
      await gone
      await s.stop()
    },
    startConductor,
    errorLines: () =>
      running.flatMap((s) =>
        s
          .output()
          .split('\n')
          .filter((l) => /"level":[56]0/.test(l)),
      ),
    metricsUrl: (i) => `http://127.0.0.1:${metricsPorts[i]}/metrics`,
    async stop() {
      await Promise.allSettled(running.map((s) => s.stop()))
      await agent?.stop()
      await bus?.close()
      await Promise.allSettled(nodeDbs.map((d) => d.close()))
    },
  }
}
