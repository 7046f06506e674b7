/**
 * `[metrics] listen`: a small HTTP listener of its own that serves `GET /metrics` for a process
 * that has no API (the conductor, the agent), or beside the API's port. Nothing else is served.
 */
import cluster from 'node:cluster'
import { createServer, type Server } from 'node:http'
import type { Logger } from 'pino'
import { optionError, type Config } from '../../config/config.js'
import { errorMessage } from '../../domain/error-message.js'
import type { PrometheusMetrics } from './prometheus.js'

/** `host:port` → its parts; IPv6 in brackets (`[::1]:9386`). */
export function parseListen(text: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port < 1 || port > 65535) return undefined
  return { host: m[1] ?? m[2]!, port }
}

/** Starts the listener when `[metrics] listen` is set; resolves with its close function. */
export async function startMetricsListener(
  config: Config,
  metrics: Pick<PrometheusMetrics, 'expose'>,
  log: Logger,
): Promise<(() => Promise<void>) | undefined> {
  const listen = config.metrics.listen
  if (listen === undefined) return undefined
  const where = parseListen(listen)
  if (where === undefined)
    throw optionError(config, 'metrics', 'listen', 'expected host:port, e.g. 127.0.0.1:9386')
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n')
      return
    }
    metrics.expose(req.headers.accept).then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err: unknown) => {
        log.error({ err }, 'metrics exposition failed')
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics exposition failed\n')
      },
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        optionError(
          config,
          'metrics',
          'listen',
          `cannot listen on ${listen}: ${errorMessage(err)}`,
        ),
      ),
    )
    server.listen(where.port, where.host, () => resolve())
  })
  log.info({ listen }, 'metrics served at /metrics')
  return () => new Promise<void>((resolve) => server.close(() => resolve()))
}

/** The `[metrics] listen` listener of a process, which a reload can move or stop. */
export interface MetricsListener {
  /**
   * Follows `config`'s `[metrics] listen`: a new address is listened on before the old one is
   * closed, so a failure leaves the old listener serving.
   * @throws ConfigError naming `[metrics] listen` when the new address cannot be listened on
   */
  apply(config: Config): Promise<void>
  close(): Promise<void>
}

/**
 * Starts the listener of `config` (if any) and returns its handle. In a worker of `cyborg api`
 * there is none: the primary serves `[metrics] listen` for all its workers (cluster-metrics.ts).
 */
export async function createMetricsListener(
  config: Config,
  metrics: Pick<PrometheusMetrics, 'expose'>,
  log: Logger,
): Promise<MetricsListener> {
  if (cluster.isWorker) return { apply: async () => {}, close: async () => {} }
  let listen = config.metrics.listen
  let close = await startMetricsListener(config, metrics, log)
  let closed = false
  return {
    async apply(next) {
      // After close (the service is stopping) a reload must not open a new one.
      if (closed || next.metrics.listen === listen) return
      const started = await startMetricsListener(next, metrics, log)
      const old = close
      close = started
      listen = next.metrics.listen
      await old?.()
      if (started === undefined) log.info('metrics listener closed ([metrics] listen is unset)')
    },
    async close() {
      closed = true
      await close?.()
      close = undefined
    },
  }
}
