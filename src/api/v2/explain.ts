/**
 * `POST /device_profiles/{name_or_uuid}/explain` (2.6, issue 17): for each request group of the
 * profile, every deployable of one host (body `hostname`) or of the fleet, with the first rule
 * that rules it out or `fits` (src/domain/explain.ts, the rules a standalone bind applies). Reads
 * only: the candidates come from src/db/reads/explain.ts, kept as fleet-reads.ts says. The body is optional:
 * `{hostname?, project_id?}`, checked by its schema. With `[quota] driver = unified_limits`, the
 * quota rule judges `project_id`'s limits and usage, or the caller's project's (docs/quota.md).
 * Below 2.6 the route is a 404 naming the microversion it needs, like `POST /devices/{uuid}/ready`.
 * With `[placement]` on the conductor, each candidate also says whether Placement offers it, and
 * why not where the two disagree (explain-placement.ts; the conductor reads Placement).
 */
import type { Static } from '@sinclair/typebox'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preValidationHookHandler,
} from 'fastify'
import type { ExplainRow } from '../../db/reads/explain.js'
import {
  explainGroups,
  judge,
  ruleRank,
  type ExplainGroup,
  type JudgeOptions,
} from '../../domain/explain.js'
import { standingOf } from '../../domain/quota.js'
import { quotaOf, quotaProject } from './quota.js'
import { formatTimestamp } from '../../domain/time.js'
import { refuseOtherProject } from '../../domain/request-context.js'
import { resource } from '../routing.js'
import { resolveDeviceProfile } from './device-profiles.js'
import type { V2Env } from './env.js'
import { ExplainBody, explainDeviceProfile } from './schemas/device-profiles.js'
import { amountOf, askGroups, clearPlacement, compareAnswer } from './explain-placement.js'
import { keptAnswer } from './fleet-memo.js'

/** The lease when `[DEFAULT] service_down_time` is not passed: its default, 60 s. */
const DEFAULT_LEASE_MS = 60_000

/**
 * Before the body is validated (and after the microversion gate, `since`): an absent body (or
 * `null`, or `""`) is `{}`, since every field is optional.
 */
const emptyBodyIsEmptyObject: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === undefined || request.body === null || request.body === '') request.body = {}
  done()
}

/** One group's verdicts: fits first, then by how early the rule that stopped them comes. */
function explainGroup(group: ExplainGroup, rows: ExplainRow[], options: JudgeOptions) {
  const candidates = rows.map((row) => {
    const { rule, reason } = judge(row, group, options)
    return {
      deployable_uuid: row.deployableUuid,
      deployable_name: row.name,
      hostname: row.hostname,
      device_uuid: row.deviceUuid,
      rule,
      reason,
      free_units: row.handles.free,
    }
  })
  const order = (rule: (typeof candidates)[number]['rule']) =>
    rule === 'fits' ? -1 : ruleRank(rule)
  candidates.sort((a, b) => order(a.rule) - order(b.rule))
  return {
    group_id: group.groupId,
    resource_class: group.resourceClass,
    required_traits: group.requiredTraits,
    forbidden_traits: group.forbiddenTraits,
    fits: candidates.filter((c) => c.rule === 'fits').length,
    candidates,
  }
}

export function explainRoutes(
  app: FastifyInstance,
  { db, serviceDownAfterMs, quota, conductor, fleet }: V2Env,
): void {
  resource(app, '/device_profiles/:value/explain', {
    POST: {
      policy: 'cyborg:device_profile:explain',
      doc: explainDeviceProfile,
      since: 6,
      preValidation: emptyBodyIsEmptyObject,
      schema: { body: ExplainBody },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const { value } = request.params as { value: string }
        const body = request.body as Static<typeof ExplainBody>
        const hostname = body.hostname ?? undefined
        const asked = body.project_id ?? undefined
        // In both quota modes: a non-admin explains only for its own project.
        refuseOtherProject(request.ctx, asked, 'explain a device profile for the quota')
        const project = asked ?? request.ctx.projectId ?? undefined
        const profile = await resolveDeviceProfile(db, value)
        let standing: JudgeOptions['quota']
        if (quota && project !== undefined) {
          const { limits, usage } = await quotaOf(db, quota, quotaProject(request.ctx, asked))
          standing = standingOf(project, limits, usage)
        }
        const groups = explainGroups(profile.groups)
        const amounts = groups.map((g) => amountOf(profile.groups, g))
        const [read, answer] = await Promise.all([
          fleet.explain(hostname),
          askGroups(conductor, groups, amounts),
        ])
        const lease = serviceDownAfterMs ?? DEFAULT_LEASE_MS
        const options = {
          leaseCutoff: formatTimestamp(new Date(Date.now() - lease)),
          quota: standing,
        }
        const judgeAll = () => groups.map((g) => explainGroup(g, read.rows, options))
        const head = {
          device_profile: { uuid: profile.uuid, name: profile.name },
          hostname: hostname ?? null,
          project_id: project ?? null,
        }
        if ('done' in answer && standing === undefined) {
          // Nothing from Placement to compare and no quota standing (limits come from Keystone,
          // not the database): the same read and question, the same bytes.
          const question = [head, profile.groups, answer.done]
          const bytes = keptAnswer({
            read,
            beats: () => read.rows.map((r) => r.agentLastSeen),
            question: JSON.stringify(question),
            leaseCutoff: options.leaseCutoff,
            compute: () => {
              const judged = judgeAll()
              clearPlacement(judged.map((g) => g.candidates))
              return JSON.stringify({ ...head, placement: answer.done, groups: judged })
            },
          })
          return reply.type('application/json; charset=utf-8').send(bytes)
        }
        const judged = judgeAll()
        const candidates = judged.map((g) => g.candidates)
        const placement = await compareAnswer(conductor, answer, candidates, read.facts)
        return { ...head, placement, groups: judged }
      },
    },
  })
}
