/**
 * The production shape for benchmarks (issue 28): `cyborg api`, `cyborg conductor` and
 * `cyborg agent` as separate processes of one checkout (this one's compiled build, as bin/cyborg
 * runs it, or a baseline's sources under tsx, such as the code of 34807ec), over RabbitMQ (a fresh vhost) and MariaDB (a fresh database migrated by that
 * checkout's `cyborg db sync`), with a real Placement behind a counting proxy
 * (shape/stand-ins.ts) and a Nova stand-in taking the conductor's bound events (so that, as in a
 * cloud with Nova, Nova's scheduler allocates and the conductor writes no allocation). The agent
 * runs the fake driver (one device of 16 units) on the storm host, activated at once. `conductors: 2`
 * starts a second `cyborg conductor` (`conductor2`, its own `[DEFAULT] host`) on the same database
 * and broker, as a second conductor machine would run.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { testBroker } from '../../test/support/peers/rabbitmq.js'
import {
  NODE,
  ROOT,
  freePort,
  printed,
  startService,
  type RunningService,
} from '../../test/support/service.js'
import { STORM_HOST, STORM_PROFILE } from '../../test/support/storm-inventory.js'
import { freshMariaDb } from './measure.js'
import { startCountingProxy, startNovaStandIn } from './stand-ins.js'

export interface ShapeOptions {
  /** The checkout whose code runs. @default this one */
  root?: string
  /** A baseline from before `[api] api_workers`, `[metrics] listen` and cleaning (34807ec). */
  baseline?: boolean
  /** `[api] api_workers`. @default 1 */
  apiWorkers?: number
  /** `cyborg conductor` processes on the same database and broker (not on a baseline). @default 1 */
  conductors?: number
  /** The fake driver's `clean` (auto | none), set on the agent through PATCH /v1/drivers/fake. */
  clean?: 'auto' | 'none'
  /** The fake driver's `clean_delay_ms`. @default 0 */
  cleanDelayMs?: number
  /** Placement's URL (started once by the caller, shared by runs). */
  placementUrl: string
  /** `--cpu-prof` on every child, profiles written to this directory. */
  cpuProfileDir?: string
  /** More NODE_OPTIONS for every child (e.g. `--heapsnapshot-signal=SIGUSR2`). */
  nodeOptions?: string
}

export interface Shape {
  url: string
  /** The storm host's deployable providers (what Placement hands Nova). */
  rps: string[]
  database: string
  /** The broker vhost's transport URL (simulated agents can report through it). */
  transportUrl: string
  /** api, conductor, agent, and conductor2 … with `conductors`. */
  pids: { api: number; conductor: number; agent: number } & Record<string, number>
  /** The MariaDB user of each process that uses the database (shape/measure.ts userStatus). */
  dbUsers: Record<string, string>
  /** /metrics URLs serving each process's event-loop lag (none on a baseline's conductor and agent). */
  metrics: { api: string; conductor?: string; agent?: string } & Record<string, string | undefined>
  /** Placement calls since the last take(), by method and path. */
  placementCalls(): Record<string, number>
  novaEvents(): number
  /** Changes the fake driver's clean options on the agent (not on a baseline). */
  setClean(clean: 'auto' | 'none', delayMs: number): Promise<void>
  stop(): Promise<void>
}

/**
 * The Node flags bin/cyborg gives `command` (its `case` lines, such as the young generation's
 * size), which startService's direct `node dist/main/cli.js` would otherwise miss. They go on
 * node's command line, not in NODE_OPTIONS, which refuses V8's flags (`--memory-saver-mode`).
 */
export function binFlags(root: string, command: string): string[] {
  const script = readFileSync(path.join(root, 'bin/cyborg'), 'utf8')
  const line = new RegExp(`^\\s*${command}\\) flags=(?:"([^"]*)"|(\\S+)) ;;$`, 'm').exec(script)
  return line ? (line[1] ?? line[2]!).split(' ').filter((f) => f !== '') : []
}

/** Runs `cyborg <args>` of `root` to its end; rejects with its output when it fails. */
/** The allocator's settings of the bench's own environment (MALLOC_*), handed to every process. */
function passThrough(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_')),
  ) as Record<string, string>
}

async function cyborg(root: string, args: string[], env: Record<string, string>): Promise<void> {
  const child = spawn(NODE, ['--import', 'tsx', path.join(root, 'src/main/cli.ts'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const code = await new Promise<number | null>((r) => child.once('close', r))
  if (code !== 0) throw new Error(`cyborg ${args.join(' ')} exited ${code}: ${out}`)
}

async function api(url: string, method: string, p: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${p}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`)
  return text ? (JSON.parse(text) as unknown) : null
}

/** Waits until the storm host's 16 units are offered: its deployable listed, the capacity free. */
async function unitsOffered(url: string, timeoutMs = 60_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { deployables } = (await api(url, 'GET', '/v2/deployables')) as {
      deployables: { rp_uuid: string | null; num_accelerators: number }[]
    }
    const ready = deployables.filter((d) => d.rp_uuid)
    if (ready.length > 0) return ready.map((d) => d.rp_uuid!)
    if (Date.now() > deadline) throw new Error('the fake device never got a resource provider')
    await new Promise((r) => setTimeout(r, 200))
  }
}

export async function startShape(options: ShapeOptions): Promise<Shape> {
  const { root = ROOT, baseline = false, apiWorkers = 1 } = options
  const broker = await testBroker()
  if (broker.skip) throw new Error(`the production shape needs RabbitMQ: ${broker.skip}`)
  const database = `cyborg_shape_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  const [db, vhost, nova, placement] = await Promise.all([
    freshMariaDb(database, ['api', 'conductor', 'sync']),
    broker.createVhost(),
    startNovaStandIn(),
    startCountingProxy(options.placementUrl),
  ])
  const env: Record<string, string> = {
    ...passThrough(),
    CYBORG_DATABASE__CONNECTION: db.url('conductor'),
    CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
    CYBORG_DEFAULT__HOST: STORM_HOST,
    CYBORG_LOG_LEVEL: 'warn',
    CYBORG_AGENT__AUTO_ACTIVATE: 'true',
    CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
    CYBORG_PLACEMENT__TOKEN: 'admin',
    CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: placement.url,
    CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
    CYBORG_NOVA__AUTH_TYPE: 'none',
    CYBORG_NOVA__ENDPOINT_OVERRIDE: `${nova.url}/v2.1`,
    ...(baseline ? {} : { CYBORG_API__API_WORKERS: String(apiWorkers) }),
  }
  const nodeArgs = (name: string) => (baseline ? [] : binFlags(root, name))
  const prof = (name: string): Record<string, string> => {
    const flags = [
      ...(options.cpuProfileDir
        ? [`--cpu-prof --cpu-prof-dir=${options.cpuProfileDir}/${name}`]
        : []),
      ...(options.nodeOptions ? [options.nodeOptions] : []),
    ]
    return flags.length > 0 ? { NODE_OPTIONS: flags.join(' ') } : {}
  }
  const started: RunningService[] = []
  const listen = async () => `127.0.0.1:${await freePort()}`
  const metrics: Shape['metrics'] = { api: '' }
  try {
    await cyborg(root, ['db', 'sync'], { ...env, CYBORG_DATABASE__CONNECTION: db.url('sync') })
    const serve = async (name: 'conductor' | 'agent', ready: RegExp, role: string = name) => {
      const at = baseline ? undefined : await listen()
      if (at) metrics[role] = `http://${at}/metrics`
      const s = await startService({
        root,
        compiled: !baseline,
        nodeArgs: nodeArgs(name),
        command: [name],
        env: {
          ...env,
          CYBORG_LOG_LEVEL: 'info', // the ready line is at info
          ...prof(name),
          ...(at ? { CYBORG_METRICS__LISTEN: at } : {}),
          ...(role === name ? {} : { CYBORG_DEFAULT__HOST: `${STORM_HOST}-${role}` }),
        },
        ready: printed(ready),
        timeoutMs: 60_000,
      })
      started.push(s)
      return s
    }
    const conductor = await serve('conductor', /cyborg conductor is ready/)
    const more: Record<string, number> = {}
    for (let n = 2; n <= (options.conductors ?? 1); n++) {
      const role = `conductor${n}`
      more[role] = (await serve('conductor', /cyborg conductor is ready/, role)).child.pid!
    }
    const agent = await serve('agent', /cyborg agent is ready/)
    const apiService = await startService({
      root,
      compiled: !baseline,
      nodeArgs: nodeArgs('api'),
      command: ['api'],
      env: { ...env, CYBORG_DATABASE__CONNECTION: db.url('api'), ...prof('api') },
      timeoutMs: 60_000,
    })
    started.push(apiService)
    metrics.api = `${apiService.url}/metrics`
    const url = apiService.url
    const setClean = async (clean: 'auto' | 'none', delayMs: number) => {
      if (baseline) return
      await api(url, 'PATCH', '/v1/drivers/fake', {
        hostname: STORM_HOST,
        options: { clean, clean_delay_ms: String(delayMs) },
      })
    }
    if (options.clean) await setClean(options.clean, options.cleanDelayMs ?? 0)
    const rps = await unitsOffered(url)
    await api(url, 'POST', '/v2/device_profiles', [
      { name: STORM_PROFILE, groups: [{ 'resources:FPGA': '1' }] },
    ])
    placement.take()
    return {
      url,
      rps,
      database,
      transportUrl: vhost.url,
      dbUsers: { api: db.users.api!, conductor: db.users.conductor! },
      pids: {
        api: apiService.child.pid!,
        conductor: conductor.child.pid!,
        agent: agent.child.pid!,
        ...more,
      },
      metrics,
      placementCalls: () => placement.take(),
      novaEvents: () => nova.events(),
      setClean,
      async stop() {
        await Promise.all(started.map((s) => s.stop()))
        await Promise.all([vhost.drop(), db.drop(), nova.stop(), placement.stop()])
      },
    }
  } catch (err) {
    await Promise.all(started.map((s) => s.stop()))
    await Promise.all([vhost.drop(), db.drop(), nova.stop(), placement.stop()])
    throw err
  }
}
