/**
 * A private RabbitMQ node for one test file (scripts/rabbitmq-node.sh): its own port, data and
 * logs in a temp dir, so the test may stop and restart it without disturbing the shared broker.
 * Without rabbitmq-server (or not as root) the tests skip, unless CYBORG_REQUIRE_SERVICES=1.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/rabbitmq-node.sh')

export interface RabbitNode {
  port: number
  /** `amqp://guest:guest@127.0.0.1:PORT/`: the broker's own URL. */
  url: string
  /** `rabbit://guest:guest@127.0.0.1:PORT/`: the same as `[DEFAULT] transport_url` (oslo's scheme). */
  transportUrl: string
  /** Stops the node (its queues stay in its directory). */
  stop(): Promise<void>
  /** Starts it again; resolves with the time (ms since the epoch) its port first accepted a connection. */
  start(): Promise<number>
  /** Stops it for good and removes its directory. */
  destroy(): Promise<void>
}

/** Why a private node cannot run here, or undefined when it can. */
export async function rabbitNodeSkip(): Promise<string | undefined> {
  let why: string | undefined
  try {
    await access('/usr/sbin/rabbitmq-server')
    if (process.getuid?.() !== 0)
      why = 'a private RabbitMQ node needs root (the Debian wrapper switches to the rabbitmq user)'
  } catch {
    why = 'rabbitmq-server is not installed (run scripts/ci-services.sh as root)'
  }
  if (why && process.env.CYBORG_REQUIRE_SERVICES === '1')
    throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
  return why
}

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

/** A port for the node whose distribution port (PORT + 20000) is free as well. */
async function pickPort(): Promise<number> {
  for (;;) {
    const port = 15_000 + Math.floor(Math.random() * 10_000)
    if (!(await canConnect(port)) && !(await canConnect(port + 20_000))) return port
  }
}

export async function startRabbitNode(): Promise<RabbitNode> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-rabbit-'))
  const port = await pickPort()
  const script = (...args: string[]) => run('bash', [SCRIPT, ...args], { timeout: 90_000 })
  const start = async () => {
    // Watch the port while the script starts the node: the script only polls every 100 ms.
    let upAt = 0
    let done = false
    const watch = (async () => {
      while (!done && upAt === 0) {
        if (await canConnect(port)) upAt = Date.now()
        else await new Promise((r) => setTimeout(r, 20))
      }
    })()
    try {
      await script('up', dir, String(port))
    } finally {
      done = true
      await watch
    }
    return upAt || Date.now()
  }
  try {
    await start()
  } catch (err) {
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  return {
    port,
    url: `amqp://guest:guest@127.0.0.1:${port}/`,
    transportUrl: `rabbit://guest:guest@127.0.0.1:${port}/`,
    stop: async () => void (await script('down', dir)),
    start,
    async destroy() {
      await script('down', dir).catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** When (ms since the epoch) a service's output first says `connected to RabbitMQ` after `since`. */
export function connectedAt(output: string, since: number): number | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"connected to RabbitMQ')) continue
    // pino's `time`: epoch ms by default; the services write ISO-8601.
    const { time } = JSON.parse(line) as { time: number | string }
    const at = typeof time === 'number' ? time : Date.parse(time)
    if (at > since) return at
  }
  return undefined
}
