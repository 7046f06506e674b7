/**
 * `GET /healthcheck` (and HEAD) for load balancers and monitoring, in oslo.middleware's
 * healthcheck format: 200 when every check passes, 503 otherwise. Three checks: the database
 * answers one read, this process's message bus is connected, and a conductor beat within
 * `[DEFAULT] service_down_time`. Cheap enough to poll every second: the one database read is
 * reused for `cacheMs` and bounded by `timeoutMs` (src/api/health-probe.ts). docs/healthcheck.md.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { BusStatus } from '../bus/bus.js'
import type { ReadDb } from '../db/reads/read-db.js'
import { getConductorBeats, type ConductorBeats } from '../db/reads/ping.js'
import { formatTimestamp } from '../domain/time.js'
import { createProbe, type ProbeOutcome } from './health-probe.js'
import { healthcheckDoc } from './schemas/root.js'

/** The default `[DEFAULT] service_down_time` (60 s), as src/api/v1/status.ts uses it. */
const DEFAULT_DOWN_AFTER_MS = 60_000

export interface HealthcheckDeps {
  db: ReadDb
  /** This process's message bus; without one (or without `status()`), the bus check passes. */
  bus?: { status?(): BusStatus } | undefined
}

export interface HealthcheckOptions {
  /** A check's outcome is reused this long, so a burst of polls costs one read. @default 1000 */
  cacheMs?: number
  /** The database check fails when its read has not answered within this long. @default 2000 */
  timeoutMs?: number
  /**
   * A conductor is up when it beat within this long (`[DEFAULT] service_down_time`); for this long
   * after start no conductor up is not yet a failure. @default 60000
   */
  serviceDownAfterMs?: number
  /** The clock (ms). @default Date.now */
  now?: () => number
}

/** One check's result, shaped like the results of oslo.middleware's healthcheck backends. */
export interface CheckResult {
  /** oslo's `class`: which check this is. */
  name: 'DatabaseCheck' | 'MessageBusCheck' | 'ConductorCheck'
  available: boolean
  /** `OK`, or what is wrong in a few words (the plain-text body lists these). */
  reason: string
  /** The state behind the reason: a timing, the broker, heartbeat counts, an error. */
  details: string
}

/** Runs the three checks; `run()` never rejects and answers within about `timeoutMs`. */
export function createHealthChecks(
  deps: HealthcheckDeps,
  options: HealthcheckOptions = {},
): { run(): Promise<CheckResult[]> } {
  const { serviceDownAfterMs: downMs = DEFAULT_DOWN_AFTER_MS, now = Date.now } = options
  const startedAt = now()
  const beats = createProbe(
    () => getConductorBeats(deps.db, formatTimestamp(new Date(now() - downMs))),
    options,
  )
  return {
    async run() {
      const db = await beats.get()
      const at = now()
      return [
        databaseCheck(db),
        busCheck(deps.bus?.status?.()),
        conductorCheck(db, { at, startedAt, downMs }),
      ]
    },
  }
}

function databaseCheck(db: ProbeOutcome<ConductorBeats>): CheckResult {
  const name = 'DatabaseCheck'
  return db.ok
    ? { name, available: true, reason: 'OK', details: `answered in ${db.ms} ms` }
    : { name, available: false, reason: 'database unavailable', details: db.error }
}

function busCheck(status: BusStatus | undefined): CheckResult {
  const name = 'MessageBusCheck'
  if (status === undefined)
    return { name, available: true, reason: 'OK', details: 'not checked: the bus reports no state' }
  switch (status.state) {
    case 'up':
      return { name, available: true, reason: 'OK', details: status.detail }
    case 'connecting':
      return { name, available: false, reason: 'message bus disconnected', details: status.detail }
    case 'closed':
      return { name, available: false, reason: 'message bus closed', details: status.detail }
  }
}

function conductorCheck(
  db: ProbeOutcome<ConductorBeats>,
  { at, startedAt, downMs }: { at: number; startedAt: number; downMs: number },
): CheckResult {
  const name = 'ConductorCheck'
  if (!db.ok) {
    const details = 'the conductors’ heartbeats are in the database, which did not answer'
    return { name, available: false, reason: 'conductor state unknown', details }
  }
  const { known, up, latest } = db.value
  const lease = `${downMs / 1000} s ([DEFAULT] service_down_time)`
  const newest =
    latest === null
      ? 'no conductor ever beat'
      : `the newest beat was ${Math.max(0, Math.round((at - Date.parse(latest)) / 1000))} s ago`
  if (up > 0) {
    const details = `${up} of ${known} conductor(s) beat within ${lease}; ${newest}`
    return { name, available: true, reason: 'OK', details }
  }
  const graceLeftMs = startedAt + downMs - at
  if (graceLeftMs > 0) {
    // Conductors started with this API have one lease to beat before their absence counts.
    const details = `no conductor beat within ${lease} yet (${newest}); not a failure for ${Math.ceil(graceLeftMs / 1000)} s more after this API's start`
    return { name, available: true, reason: 'OK', details }
  }
  const details = `none of ${known} conductor(s) beat within ${lease}; ${newest}`
  return { name, available: false, reason: 'no conductor up', details }
}

type Format = 'text/plain' | 'application/json'
/** oslo.middleware's offers in its order of preference (no text/html here: plain text stands in). */
const OFFERS: readonly Format[] = ['text/plain', 'application/json']

/**
 * The offer the Accept header prefers: the highest quality, ties going to the earlier offer; each
 * offer's quality is that of the most specific range matching it. No header, or nothing
 * acceptable, gives text/plain (as oslo.middleware: an error here would upset load balancers).
 */
export function negotiate(accept: string | undefined): Format {
  if (accept === undefined || accept.trim() === '') return 'text/plain'
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    const quality = q === undefined ? 1 : Number(q.slice(2))
    return { range, q: Number.isFinite(quality) ? quality : 0 }
  })
  let best: { format: Format; q: number } = { format: 'text/plain', q: 0 }
  for (const format of OFFERS) {
    const type = `${format.split('/')[0]}/*`
    const match =
      ranges.find((r) => r.range === format) ??
      ranges.find((r) => r.range === type) ??
      ranges.find((r) => r.range === '*/*')
    if (match && match.q > best.q) best = { format, q: match.q }
  }
  return best.format
}

/** `?detailed`, `?detailed=true` (or 1, yes, on) ask for details; `?detailed=false` (0, no, off) not. */
export function wantsDetails(query: unknown): boolean {
  if (typeof query !== 'object' || query === null || !('detailed' in query)) return false
  const value = (query as { detailed: unknown }).detailed
  const text = String(Array.isArray(value) ? value[value.length - 1] : value).toLowerCase()
  return !['false', '0', 'no', 'off'].includes(text)
}

/** The body of one answer, in oslo.middleware's shapes. */
export function renderHealth(
  results: readonly CheckResult[],
  { format, detailed, at }: { format: Format; detailed: boolean; at: number },
): string | Record<string, unknown> {
  const failing = results.filter((r) => !r.available)
  if (format === 'application/json') {
    if (!detailed)
      return {
        detailed: false,
        reasons: failing.length === 0 ? ['OK'] : failing.map((r) => r.reason),
      }
    return {
      detailed: true,
      now: formatTimestamp(new Date(at)),
      reasons: results.map((r) => ({ reason: r.reason, details: r.details, class: r.name })),
    }
  }
  if (detailed) return results.map((r) => `${r.name}: ${r.reason} (${r.details})`).join('\n')
  return failing.length === 0 ? 'OK' : failing.map((r) => r.reason).join('\n')
}

/** Registers GET and HEAD `/healthcheck` (public: no token, no policy rule). */
export function healthcheckRoutes(
  app: FastifyInstance,
  deps: HealthcheckDeps,
  options: HealthcheckOptions = {},
): void {
  const { now = Date.now } = options
  const checks = createHealthChecks(deps, options)
  const failing = new Set<CheckResult['name']>()
  /** Logs each change of a check's state once, not at every poll. */
  const noteChanges = (request: FastifyRequest, results: readonly CheckResult[]) => {
    for (const r of results) {
      if (r.available === !failing.has(r.name)) continue
      if (r.available) {
        failing.delete(r.name)
        request.log.info(
          { check: r.name, details: r.details },
          `healthcheck: ${r.name} passes again`,
        )
      } else {
        failing.add(r.name)
        request.log.warn({ check: r.name, details: r.details }, `healthcheck: ${r.reason}`)
      }
    }
  }
  app.route({
    method: ['GET', 'HEAD'],
    url: '/healthcheck',
    exposeHeadRoute: false,
    config: { doc: healthcheckDoc },
    handler: async (request, reply) => {
      const results = await checks.run()
      noteChanges(request, results)
      const healthy = results.every((r) => r.available)
      reply.header('vary', 'Accept')
      // HEAD: oslo.middleware answers 204 when healthy, with no body either way.
      if (request.method === 'HEAD')
        return reply
          .code(healthy ? 204 : 503)
          .type('text/plain; charset=utf-8')
          .send()
      const format = negotiate(request.headers.accept)
      const body = renderHealth(results, {
        format,
        detailed: wantsDetails(request.query),
        at: now(),
      })
      return reply
        .code(healthy ? 200 : 503)
        .type(
          format === 'application/json'
            ? 'application/json; charset=utf-8'
            : 'text/plain; charset=utf-8',
        )
        .send(body)
    },
  })
}
