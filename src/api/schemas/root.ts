/** The documentation of the root routes: version discovery, `/healthcheck` and `/metrics`. */
import { Type } from '@sinclair/typebox'
import { errors, Links, type RouteDoc } from './common.js'

const Version = Type.Object({
  id: Type.String({
    description: '`v2`/`v1` in the root list, `v2.0`/`v1.0` in their own document',
  }),
  status: Type.String({ description: '`CURRENT` (v2) or `SUPPORTED` (v1)' }),
  min_version: Type.String({ description: 'The oldest microversion (empty for v1)' }),
  max_version: Type.String({ description: 'The newest microversion (empty for v1)' }),
  links: Links,
})

export const rootDoc: RouteDoc = {
  summary: 'List the API versions',
  tags: ['versions'],
  security: [],
  response: {
    200: Type.Object({
      name: Type.String(),
      description: Type.String(),
      versions: Type.Array(Version),
      default_version: Version,
    }),
  },
}

export const versionDoc = (which: 'v1' | 'v2'): RouteDoc => ({
  summary: `Describe ${which}; its \`self\` link is the base URL keystoneauth uses`,
  tags: ['versions'],
  security: [],
  response: { 200: Version, ...(which === 'v2' ? errors(406) : {}) },
})

const Check = Type.Object({ reason: Type.String(), details: Type.String(), class: Type.String() })
const Health = Type.Union([
  Type.String({ description: 'text/plain: `OK`, or the failing checks one per line' }),
  Type.Object({
    detailed: Type.Boolean(),
    now: Type.Optional(Type.String()),
    reasons: Type.Union([Type.Array(Type.String()), Type.Array(Check)]),
  }),
])
const healthContent = (description: string) =>
  Type.Unsafe({
    description,
    content: {
      'text/plain': { schema: Type.String() },
      'application/json': { schema: Health },
    },
  })

export const healthcheckDoc: RouteDoc = {
  summary: 'Health of the database, the message bus and the conductors (oslo.middleware format)',
  description:
    'GET answers 200 or 503 with a body negotiated on Accept (text/plain or application/json); HEAD answers 204 or 503 without a body.',
  tags: ['health'],
  security: [],
  querystring: Type.Object({
    detailed: Type.Optional(
      Type.String({ description: 'Present (or true, 1, yes, on): every check with its details' }),
    ),
  }),
  response: {
    200: healthContent('Every check passes (GET)'),
    204: Type.Null({ description: 'Every check passes (HEAD)' }),
    503: healthContent('A check fails'),
  },
}

export const metricsDoc: RouteDoc = {
  summary: 'Prometheus metrics of this process ([metrics] enabled)',
  description:
    'The Prometheus text format, or OpenMetrics when Accept asks for application/openmetrics-text.',
  tags: ['metrics'],
  security: [],
  response: {
    200: Type.Unsafe({
      description: 'The exposition',
      content: {
        'text/plain': { schema: Type.String() },
        'application/openmetrics-text': { schema: Type.String() },
      },
    }),
  },
}
