/** The documentation of `GET /v2/quota` (src/api/v2/quota.ts). */
import { Type } from '@sinclair/typebox'
import { guarded, nullable, QueryString, stringEnum, type RouteDoc } from '../../schemas/common.js'

export const QuotaQuery = Type.Object({
  project_id: Type.Optional(QueryString({ minLength: 1 }, 'must not be empty')),
})

export const getQuota: RouteDoc = {
  summary: "A project's accelerator limits (Keystone unified limits) and usage (2.7)",
  description:
    "Without project_id, the caller's project; only an admin may name another. Below 2.7 the route answers 404 naming the microversion it needs.",
  tags: ['quota'],
  querystring: QuotaQuery,
  response: {
    200: Type.Object({
      quota: Type.Object({
        project_id: Type.String(),
        driver: stringEnum(['noop', 'unified_limits']),
        resources: Type.Array(
          Type.Object({
            resource: Type.String({
              description: 'class:<RESOURCE_CLASS>, or another limited name',
            }),
            limit: nullable(Type.Integer()),
            in_use: Type.Integer(),
          }),
        ),
      }),
    }),
    ...guarded(400, 403, 404, 406),
  },
}
