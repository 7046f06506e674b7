/** Starts the HTTP API of a process on `[api] host_ip`:`port`. */
import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { configFiles, optionError, type Config } from '../config/config.js'
import { createApp } from '../api/app.js'
import type { DatabaseHandle } from '../db/core/connection.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { apiAuthenticator } from './api-auth.js'
import { createReloadingEnforcer } from '../policy/index.js'
import { errorMessage } from '../domain/error-message.js'
import { errorCode, quotaLimits } from './resources.js'
import { loadApiTls } from './tls.js'
import type { ApiTls } from '../api/types.js'
import type { MessageBus } from '../bus/bus.js'
import type { PrometheusMetrics } from './metrics/prometheus.js'
import type { Reloader } from './reload.js'
import { workerMetrics } from './metrics/cluster-metrics.js'

export interface ListeningApi {
  app: FastifyInstance
  /** `http://127.0.0.1:6666` (`https://…` with `[api] enable_ssl_api`): where clients reach it. */
  url: string
}

export async function startHttpApi(
  config: Config,
  /** `https`: the TLS material when the caller loaded it already (loadApiTls); else read here. */
  deps: {
    db: DatabaseHandle
    conductor: ConductorRpc
    log: Logger
    https?: ApiTls | undefined
    /** The process's metrics: request counts always, `GET /metrics` when `[metrics] enabled`. */
    metrics?: PrometheusMetrics
    /** The process's message bus, whose connection `/healthcheck` reports. */
    bus?: MessageBus
    /** SIGHUP's reload: it re-reads `[oslo_policy] policy_file` (and the file) here. */
    reload?: Reloader
  },
): Promise<ListeningApi> {
  const { host_ip: host, port, public_endpoint: publicEndpoint, max_arqs_per_request } = config.api
  const { handler_timeout } = config.api
  if (handler_timeout <= config.DEFAULT.rpc_response_timeout) {
    deps.log.warn(
      { handler_timeout, rpc_response_timeout: config.DEFAULT.rpc_response_timeout },
      '[api] handler_timeout is not above [DEFAULT] rpc_response_timeout: a slow conductor is reported as a handler timeout',
    )
  }
  const https = deps.https ?? loadApiTls(config)
  const auth = apiAuthenticator(config, deps.log)
  // policy.yaml is read again when it changes (checked at most every 5 s) and on SIGHUP.
  const enforcer = createReloadingEnforcer(config, {
    configFiles: configFiles(config),
    log: deps.log,
  })
  deps.reload?.add({
    name: 'policy',
    apply: (next) => {
      if (!enforcer.reload(next)) throw new Error('the policy file did not load (logged above)')
    },
  })
  // Recorded when someone can read them: /metrics here, or [metrics] listen.
  const metrics =
    config.metrics.enabled || config.metrics.listen !== undefined ? deps.metrics : undefined
  // In a worker of `cyborg api`, the primary collects this registry, and /metrics is its aggregate.
  const expose = metrics && (cluster.isWorker ? workerMetrics(metrics.registry) : metrics.expose)
  const app = await createApp(
    {
      db: deps.db.db,
      conductor: deps.conductor,
      log: deps.log,
      bus: deps.bus,
      telemetryBus: deps.bus,
      ...(metrics === undefined
        ? {}
        : { metrics, ...(config.metrics.enabled ? { exposition: expose } : {}) }),
    },
    {
      maxArqsPerRequest: max_arqs_per_request,
      fleetCacheMs: config.api.fleet_cache_ms,
      timeouts: {
        headersMs: config.api.headers_timeout * 1000,
        requestMs: config.api.request_timeout * 1000,
        handlerMs: handler_timeout * 1000,
        keepAliveMs: config.api.keepalive_timeout * 1000,
        idleMs: config.api.client_socket_timeout * 1000,
      },
      auth,
      enforcer,
      // Every process heartbeats each [agent] report_interval; down after service_down_time (Nova's rule).
      serviceDownAfterMs: config.DEFAULT.service_down_time * 1000,
      quota: quotaLimits(config),
      ...(publicEndpoint === undefined ? {} : { publicEndpoint }),
      // Forwarded headers only when enabled, and then only from the proxies named (issue 27).
      ...(config.oslo_middleware.enable_proxy_headers_parsing
        ? { trustedProxies: config.api.trusted_proxies }
        : {}),
      ...(https === undefined ? {} : { https }),
    },
  )
  drainOnClose(app)
  try {
    await app.listen({ host, port })
  } catch (err) {
    await app.close().catch(() => {})
    const code = errorCode(err)
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw optionError(config, 'api', 'port', `cannot listen on ${host}:${port}: ${code}`)
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
      throw optionError(config, 'api', 'host_ip', `cannot listen on ${host}:${port}: ${code}`)
    }
    throw new Error(`cannot listen on ${host}:${port}: ${errorMessage(err)}`, { cause: err })
  }
  const shown =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host
  return { app, url: `${https === undefined ? 'http' : 'https'}://${shown}:${port}` }
}

/**
 * A graceful stop drains: once `app.close()` has begun, each response still to be sent says
 * `Connection: close`, so that the keep-alive connection of a request that was in flight closes
 * after its answer instead of idling until keepalive_timeout and holding the stop back (Fastify
 * closes the connections idle at close time, and answers 503 to requests arriving after it).
 */
function drainOnClose(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}
