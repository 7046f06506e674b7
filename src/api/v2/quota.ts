/**
 * `GET /quota[?project_id=P]` (2.7, docs/quota.md): a project's unified limits under the
 * accelerator service and the units it holds through binds Cyborg placed, one row per resource that
 * has a limit or is in use. Without `project_id`, the caller's project; a non-admin may name only
 * their own. With `[quota] driver = noop` the rows show usage and no limits.
 * Below 2.7 the route is a 404 naming the microversion it needs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { readQuotaUsage } from '../../db/reads/quota-usage.js'
import { InvalidInputError } from '../../domain/errors.js'
import { quotaRows, type Limits, type LimitSource } from '../../domain/quota.js'
import { refuseOtherProject, type RequestContext } from '../../domain/request-context.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { Db } from '../types.js'
import type { V2Env } from './env.js'
import { getQuota, type QuotaQuery } from './schemas/quota.js'

/**
 * The project a quota read is about: `asked`, or the caller's. A non-admin asking for another
 * project is refused; a caller with no project must name one.
 */
export function quotaProject(ctx: RequestContext, asked: string | undefined): string {
  refuseOtherProject(ctx, asked, 'read the quota')
  const project = asked ?? ctx.projectId
  if (!project)
    throw new InvalidInputError(
      "Invalid input for field 'project_id': the token has no project; name one",
      { details: { field: 'project_id' } },
    )
  return project
}

/** The limits of `project` (none without a limit source) and its usage. */
export async function quotaOf(db: Db, quota: LimitSource | undefined, project: string) {
  const limits: Limits = quota ? await quota.limitsOf(project) : new Map()
  const usage = await readQuotaUsage(db, project)
  return { limits, usage }
}

export function quotaRoutes(app: FastifyInstance, { db, quota }: V2Env): void {
  resource(app, '/quota', {
    GET: {
      policy: 'cyborg:quota:get',
      doc: getQuota,
      since: 7,
      handler: async (request: FastifyRequest) => {
        const { project_id } = request.query as QueryOf<typeof QuotaQuery>
        const project = quotaProject(request.ctx, project_id)
        const { limits, usage } = await quotaOf(db, quota, project)
        return {
          quota: {
            project_id: project,
            driver: quota ? 'unified_limits' : 'noop',
            resources: quotaRows(limits, usage).map((r) => ({
              resource: r.resource,
              limit: r.limit,
              in_use: r.inUse,
            })),
          },
        }
      },
    },
  })
}
