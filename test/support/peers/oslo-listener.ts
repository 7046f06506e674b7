/**
 * A real oslo.messaging notification listener (test/support/peers/oslo-listener.py, run with Debian's
 * /usr/bin/python3 and python3-oslo.messaging) for tests of what Cyborg puts on the bus. Without
 * the package the tests skip, unless CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import path from 'node:path'
import { ROOT } from '../service.js'

const PYTHON = '/usr/bin/python3'
const SCRIPT = path.join(ROOT, 'test/support/peers/oslo-listener.py')

/** What the listener's endpoint got for one notification. */
export interface ReceivedNotification {
  /** The endpoint method that got it: `info`, `error`, … */
  priority: string
  ctxt: Record<string, unknown>
  publisher_id: string
  event_type: string
  payload: Record<string, unknown>
  metadata: { message_id: string; timestamp: string }
}

export interface RunningListener {
  /** Resolves with the notifications once `count` arrived; rejects when the listener failed. */
  received: Promise<ReceivedNotification[]>
  /** What arrived so far. */
  soFar(): ReceivedNotification[]
  /** Kills the listener if it is still running. */
  stop(): void
}

/** Why the oslo listener cannot run here, or undefined when it can. */
export async function osloListenerSkip(): Promise<string | undefined> {
  const why = await new Promise<string | undefined>((resolve) => {
    execFile(PYTHON, ['-c', 'import oslo_messaging'], { timeout: 30_000 }, (err) =>
      resolve(
        err
          ? `python3-oslo.messaging is not installed for ${PYTHON} (run scripts/ci-services.sh as root)`
          : undefined,
      ),
    )
  })
  if (why !== undefined && process.env.CYBORG_REQUIRE_SERVICES === '1')
    throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
  return why
}

/**
 * Starts a listener on `exchange`/`topic` at every priority; resolves once its queues are
 * declared and bound (consuming), with the notifications to come.
 */
export async function startOsloListener(options: {
  url: string
  exchange?: string
  topic?: string
  count: number
  timeoutSeconds?: number
}): Promise<RunningListener> {
  const { url, exchange = 'cyborg', topic = 'notifications', count, timeoutSeconds = 30 } = options
  const child = spawn(
    PYTHON,
    [SCRIPT, url, exchange, topic, String(count), String(timeoutSeconds)],
    {
      env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const got: ReceivedNotification[] = []
  let ready!: () => void
  const isReady = new Promise<void>((resolve) => (ready = resolve))
  const lines = createInterface({ input: child.stdout })
  lines.on('line', (line) => {
    const parsed = JSON.parse(line) as { ready?: boolean } & ReceivedNotification
    if (parsed.ready === true) ready()
    else got.push(parsed)
  })
  const exited = new Promise<ReceivedNotification[]>((resolve, reject) => {
    child.on('close', (code) => {
      if (code === 0) resolve(got)
      else
        reject(
          new Error(
            `oslo listener exited ${code} after ${got.length}/${count} notification(s): ${stderr.trim()}`,
          ),
        )
    })
  })
  exited.catch(() => {}) // surfaced through `received` or the ready race below
  await Promise.race([isReady, exited])
  return {
    received: exited,
    soFar: () => [...got],
    stop: () => {
      if (child.exitCode === null) child.kill('SIGKILL')
    },
  }
}
