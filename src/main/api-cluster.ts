/**
 * `cyborg api` with `[api] api_workers` = N > 1 (unset: the number of cores): this process is the
 * node:cluster primary and forks N workers, each a whole `cyborg api` (startApiService: its own
 * database pool, bus connection and RPC reply queue, heartbeat, log lines with `worker` and `pid`)
 * listening on the same port; the primary accepts the connections and hands them to the workers in
 * turn. The primary holds no database and no bus: it restarts workers, serves `[metrics] listen`
 * with the sum of the workers' metrics (cluster-metrics.ts) and passes SIGHUP on.
 *
 * - Start: the first worker starts alone, so that what keeps it from starting (a configuration
 *   error, a port in use) is said once, on stderr, and the primary exits with its code; then the
 *   others start together.
 * - Stop (SIGTERM, SIGINT): every worker is sent SIGTERM and drains (it stops accepting, finishes
 *   the requests in flight, then exits); the primary exits once all have, 0 when all exited 0.
 * - A worker that exits otherwise is replaced. One that ran under QUICK_EXIT_MS counts as a quick
 *   exit and its replacement waits (0.5 s, then twice as long each time, up to 8 s); after
 *   MAX_QUICK_EXITS quick exits in a row of one worker the primary stops the others and exits 1.
 */
import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import type { Logger } from 'pino'
import type { Config } from '../config/config.js'
import { safeLine } from '../cli/client.js'
import { reconfigureLogger } from './logger.js'
import { primaryMetrics } from './metrics/cluster-metrics.js'
import { createMetricsListener } from './metrics/metrics-server.js'
import { createReloader, reloadOnSighup } from './reload.js'
import { startApiService, type RunningService, type StartOptions } from './compose.js'

/** A worker that exits sooner than this after its start counts as failing to start. */
export const QUICK_EXIT_MS = 10_000
/** Quick exits in a row of one worker after which the primary gives up. */
export const MAX_QUICK_EXITS = 5
const FIRST_BACKOFF_MS = 500
const MAX_BACKOFF_MS = 8000

/** What a worker tells the primary once it listens. */
interface ReadyMessage {
  type: 'cyborg:api-ready'
  url: string
}

/** `[api] api_workers`, or the number of cores when unset. */
export function apiWorkerCount(config: Config): number {
  return config.api.api_workers ?? availableParallelism()
}

/** `cyborg api`: the API itself with one worker (and in a worker), else the primary of N workers. */
export async function startApi(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService> {
  if (cluster.isWorker) {
    const running = await startApiService(config, log, options)
    const ready: ReadyMessage = { type: 'cyborg:api-ready', url: running.url }
    process.send?.(ready)
    return running
  }
  const count = apiWorkerCount(config)
  if (count === 1) return startApiService(config, log, options)
  return startPrimary(config, log, count)
}

/** One place in the pool, refilled when its worker exits. */
interface Slot {
  worker: Worker | undefined
  ready: boolean
  startedAt: number
  quickExits: number
  timer: NodeJS.Timeout | undefined
}

async function startPrimary(config: Config, log: Logger, count: number): Promise<RunningService> {
  const slots: Slot[] = Array.from({ length: count }, () => ({
    worker: undefined,
    ready: false,
    startedAt: 0,
    quickExits: 0,
    timer: undefined,
  }))
  const readyWorkers = () => slots.flatMap((s) => (s.ready && s.worker ? [s.worker] : []))
  const listener = await createMetricsListener(config, primaryMetrics(readyWorkers), log)
  const reload = createReloader(config, { log })
  reload.add({ name: 'logging', apply: (next) => reconfigureLogger(log, next, process.env) })
  reload.add({ name: 'metrics listener', apply: (next) => listener.apply(next) })
  // Each worker reads the files again itself (policy, logging, …).
  reload.add({ name: 'api workers', apply: () => signalAll('SIGHUP') })
  const stopReloading = reloadOnSighup(reload, log)
  let stopping = false
  let announced = false
  /** The first worker became ready: the others were forked, and exits are restarted from now on. */
  let up = false

  const signalAll = (signal: NodeJS.Signals) => {
    for (const { worker } of slots)
      if (worker?.process.exitCode === null) worker.process.kill(signal)
  }
  const fork = (slot: Slot) => {
    slot.timer = undefined
    const worker = cluster.fork()
    Object.assign(slot, { worker, ready: false, startedAt: Date.now() })
    worker.on('message', (message: Partial<ReadyMessage>) => {
      if (message.type !== 'cyborg:api-ready' || slot.worker !== worker) return
      slot.ready = true
      log.info({ worker: worker.id, worker_pid: worker.process.pid }, 'API worker ready')
      if (!up) {
        up = true
        for (const other of slots.slice(1)) fork(other)
      }
      if (announced || !slots.every((s) => s.ready)) return
      announced = true
      log.info(
        { url: message.url, workers: count },
        `cyborg api is ready at ${message.url}/v2: ${count} workers`,
      )
    })
    worker.on('exit', (code, signal) => {
      if (slot.worker === worker) onExit(slot, worker, code, signal)
    })
  }
  const onExit = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    Object.assign(slot, { worker: undefined, ready: false })
    if (stopping) return
    if (!up) {
      // The first worker could not start: it said why on stderr; so does `cyborg api` alone.
      log.error({ worker: worker.id, code, signal }, 'the first API worker did not start; stopping')
      void stop().finally(() => process.exit(code || 1))
      return
    }
    const livedMs = Date.now() - slot.startedAt
    slot.quickExits = livedMs < QUICK_EXIT_MS ? slot.quickExits + 1 : 0
    const how = signal === null ? `exit code ${code}` : `signal ${signal}`
    const fields = {
      worker: worker.id,
      worker_pid: worker.process.pid,
      code,
      signal,
      lived_ms: livedMs,
    }
    if (slot.quickExits >= MAX_QUICK_EXITS) {
      giveUp(
        `an API worker exited within ${QUICK_EXIT_MS / 1000} s of its start ${MAX_QUICK_EXITS} ` +
          `times in a row (the last: ${how}); giving up (its own error is logged above)`,
      )
      return
    }
    const delayMs =
      slot.quickExits === 0
        ? 0
        : Math.min(FIRST_BACKOFF_MS * 2 ** (slot.quickExits - 1), MAX_BACKOFF_MS)
    log.error(
      { ...fields, restart_in_ms: delayMs },
      `API worker ${worker.process.pid} died (${how}) after ${(livedMs / 1000).toFixed(1)} s; starting another in ${delayMs} ms`,
    )
    slot.timer = setTimeout(() => fork(slot), delayMs)
  }
  const giveUp = (reason: string) => {
    log.fatal(reason)
    process.stderr.write(`${safeLine(`cyborg api: ${reason}`)}\n`)
    void stop().finally(() => process.exit(1))
  }
  const stop = async (): Promise<boolean> => {
    stopping = true
    stopReloading()
    for (const slot of slots) clearTimeout(slot.timer)
    const exits = slots.flatMap(({ worker }) =>
      worker === undefined || worker.process.exitCode !== null || worker.process.signalCode !== null
        ? []
        : [new Promise<boolean>((resolve) => worker.once('exit', (code) => resolve(code === 0)))],
    )
    signalAll('SIGTERM')
    const ok = (await Promise.all(exits)).every(Boolean)
    await listener.close()
    return ok
  }

  log.info({ workers: count, primary_pid: process.pid }, `starting ${count} API workers`)
  // The first worker starts alone, so that a configuration it cannot start with is reported once.
  fork(slots[0]!)
  return { stop }
}
