/**
 * Metrics of the API (issue 16, docs/metrics.md): every answered request counts, by route
 * template (never the raw URL: `/v2/devices/:uuid`, so no uuid is a label), method and status,
 * with its latency; and `GET /metrics` serves the process's metrics without a token when
 * `[metrics] enabled`. Keep it off the public endpoint at the proxy (docs/metrics.md).
 */
import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../domain/metrics.js'
import { metricsDoc } from './schemas/root.js'

/** The exposition of the process's metrics, negotiated on the Accept header (src/main/metrics/prometheus.ts). */
export type Exposition = (
  accept: string | undefined,
) => Promise<{ contentType: string; body: string }>

/** The label of a request that matched no route (404s, 405s): one series, whatever the URL. */
const UNMATCHED = 'unmatched'

export function installMetrics(app: FastifyInstance, metrics: Metrics, exposition?: Exposition) {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED
    const method = request.method
    metrics.inc('cyborg_http_requests_total', {
      route,
      method,
      status: String(reply.statusCode),
    })
    metrics.observe('cyborg_http_request_duration_seconds', reply.elapsedTime / 1000, {
      route,
      method,
    })
    done()
  })
  if (exposition === undefined) return
  app.get('/metrics', { config: { doc: metricsDoc } }, async (request, reply) => {
    const { contentType, body } = await exposition(request.headers.accept)
    return reply.header('content-type', contentType).send(body)
  })
}
