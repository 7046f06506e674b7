/**
 * What the API needs from the outside (deps), how it is tuned (options), and what every request
 * carries once the `onRequest` hooks ran (its caller context and its microversion).
 */
import type { Logger } from 'pino'
import type { ReadDb } from '../db/reads/read-db.js'
import type { EventHubOptions } from './v2/event-hub.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type { RequestContext } from '../domain/request-context.js'
import type { Authenticator } from './auth.js'
import type { Enforcer } from '../policy/index.js'
import type { HealthcheckDeps, HealthcheckOptions } from './healthcheck.js'
import type { Metrics } from '../domain/metrics.js'
import type { Exposition } from './metrics.js'
import type { MessageBus } from '../bus/bus.js'
import type { LimitSource } from '../domain/quota.js'

/**
 * The database as the API holds it: for reads only (src/db/core/connection.ts's ReadDb has no insert,
 * update, delete or transaction), so no write repository function accepts it.
 */
export type Db = ReadDb

export interface ApiDeps {
  /** Reads only, through the read repository functions of src/db; typed so that writes do not compile. */
  db: Db
  /** Every write goes through the conductor. */
  conductor: ConductorRpc
  log: Logger
  /** This process's message bus, whose connection `/healthcheck` reports. @default not checked */
  bus?: HealthcheckDeps['bus']
  /** Where request counts and latencies go (src/api/metrics.ts). @default none recorded */
  metrics?: Metrics
  /** `[metrics] enabled` on the API: `GET /metrics` serves this, without a token. */
  exposition?: Exposition
  /** Where agents publish device telemetry (`cyborg.telemetry`), kept for `GET /v1/telemetry`. @default none heard */
  telemetryBus?: Pick<MessageBus, 'subscribe'>
}

export interface ApiOptions {
  /**
   * `[api] public_endpoint`: the base URL that links and version documents use, e.g.
   * `https://cloud.example.com/accelerator`. When unset, links are built from the request's
   * `Host`, or from `X-Forwarded-Proto`/`X-Forwarded-Host`/`X-Forwarded-Prefix` of a trusted proxy.
   */
  publicEndpoint?: string
  /**
   * `[api] trusted_proxies` when `[oslo_middleware] enable_proxy_headers_parsing` is on: the peers
   * (IP addresses, CIDR networks) whose forwarded headers build links. @default none: nobody's
   */
  trustedProxies?: readonly string[]
  /** Largest accepted request body in bytes; bigger bodies get 413. @default 1048576 */
  bodyLimit?: number
  /** `[api] max_arqs_per_request`: most accelerator requests one POST may create. @default 64 */
  maxArqsPerRequest?: number
  /** `GET /v1/status` shows a process down after this long without a heartbeat. @default 60000 */
  serviceDownAfterMs?: number
  /** `[quota] driver = unified_limits`: Keystone limits read by GET /v2/quota and explain. @default none (noop) */
  quota?: LimitSource
  /** `[api] fleet_cache_ms`: how long capacity and explain reuse one read of the fleet. @default 0, every request reads */
  fleetCacheMs?: number
  /** The event stream's poller (src/api/v2/event-hub.ts): its period, batch, gap and heartbeat times. @default 300 ms, 500, 30 s, 15 s */
  eventStream?: EventHubOptions
  /**
   * `[api] auth_strategy`: who the caller is (src/api/auth.ts). Without it every caller is an
   * admin without a project (the embedded tests' default).
   */
  auth?: Authenticator
  /** The policy (`[oslo_policy] policy_file` over the defaults). @default the defaults alone */
  enforcer?: Pick<Enforcer, 'enforce' | 'allowed'>
  /**
   * `[api] enable_ssl_api`: serve HTTPS only with this PEM key and certificate; with `ca`, clients
   * must present a certificate it signed. @default plain HTTP
   */
  https?: ApiTls
  /** The `[api]` time limits; each one left out takes its default (DEFAULT_TIMEOUTS in app.ts). */
  timeouts?: Partial<ApiTimeouts>
  /** `/healthcheck`'s cache, time limit and clock; its conductor lease is `serviceDownAfterMs`. */
  healthcheck?: Omit<HealthcheckOptions, 'serviceDownAfterMs'>
}

/** How long a client and a handler may take, in ms (`[api] *_timeout`, docs/configuration.md). */
export interface ApiTimeouts {
  /** Request line and headers received (Node's `headersTimeout`); then 408 and closed. */
  headersMs: number
  /** The whole request received, body included (Node's `requestTimeout`); then 408 and closed. */
  requestMs: number
  /** A route's work, from the first hook to the reply (Fastify's `handlerTimeout`); then 503. */
  handlerMs: number
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number
  /** A connection with no traffic either way is closed after this (`client_socket_timeout`). */
  idleMs: number
}

/** The TLS material of the listener, already read and checked (src/main/tls.ts). */
export interface ApiTls {
  key: Buffer
  cert: Buffer
  ca?: Buffer
}

/** Who is calling: set by the authentication hook (src/api/auth.ts). */
export type { RequestContext } from '../domain/request-context.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, set by the identity hook (src/api/context.ts) before routing. */
    ctx: RequestContext
    /** The negotiated microversion's minor number (the major is always 2); 0 on unversioned routes. */
    apiMinor: number
  }
}
