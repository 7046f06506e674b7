/**
 * Accelerator requests, as Nova and the openstack CLI call them (wire-nova.md,
 * wire-openstack-cli.md): `POST /accelerator_requests` → 201 `{arqs}`; `GET /accelerator_requests`
 * (?instance=, ?bind_state=resolved → 423 while the instance's ARQs are not all resolved; paging);
 * `GET /accelerator_requests/{uuid}`; `PATCH /accelerator_requests[/{uuid}]` (bind or unbind) → 202;
 * `DELETE /accelerator_requests?instance=|?arqs=u1,u2` and `DELETE /accelerator_requests/{uuid}` → 204.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ARQ_SORT_KEYS } from '../../db/reads/arq-views.js'
import {
  getArqDetail,
  hasUnresolvedArqs,
  listArqDetails,
  RESOLVED_STATES,
  type ArqDetail,
} from '../../db/reads/arq-views.js'
import { arqFailureReasons, FAILED_ARQ_STATES } from '../../db/reads/arq-reasons.js'
import { isUuidLike, newUuid } from '../../domain/ids.js'
import { ForbiddenError, InvalidInputError, NotFoundError } from '../../domain/errors.js'
import { visibleProject, type RequestContext } from '../../domain/request-context.js'
import { commaList, markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import { ArqPatchBody, parseArqPatch } from './arq-patch.js'
import type { V2Env } from './env.js'
import { ArqListView, arqView } from './views.js'
import * as docs from './schemas/arqs.js'

/**
 * POST body. The openstack CLI also sends `device_profile_group_id` (null, or a string of digits
 * with `--group-id`); OpenStack Cyborg ignores it and creates the ARQs of every group, and so do we.
 */
const ArqCreateBody = Type.Object(
  {
    // Empty is let through to the lookup: OpenStack Cyborg answers it 404 "Device Profile not found".
    device_profile_name: Type.String({ maxLength: 255 }),
    device_profile_group_id: Type.Optional(
      Type.Unsafe<number | string | null>({
        type: ['integer', 'string', 'null'],
        minimum: 0,
        pattern: '^[0-9]{1,9}$',
      }),
    ),
  },
  { additionalProperties: false },
)

const notFound = (uuid: string) =>
  new NotFoundError(`accelerator request ${uuid} not found`, {
    code: 'ARQ_NOT_FOUND',
    details: { uuid },
  })

/** The `:uuid` path parameter, lower-cased; a malformed one is 404 like an unknown one. */
function uuidParam(request: FastifyRequest): string {
  const { uuid } = request.params as { uuid: string }
  if (!isUuidLike(uuid)) throw notFound(uuid)
  return uuid.toLowerCase()
}

/** Bind, unbind and deleting a bound request need a valid service token (Nova's, with the service role). */
function requireServiceToken(ctx: RequestContext, what: string): void {
  if (ctx.serviceToken) return
  throw new ForbiddenError(
    `${what} requires a service token: an X-Service-Token with one of the service roles ([keystone_authtoken] service_token_roles)`,
    {
      code: 'SERVICE_TOKEN_REQUIRED',
    },
  )
}

/** The request, if the caller may see it; another project's is 404, exactly like a missing one. */
async function visible({ db }: Pick<V2Env, 'db'>, ctx: RequestContext, uuid: string) {
  const arq = await getArqDetail(db, uuid)
  const project = visibleProject(ctx)
  if (project !== undefined && arq.projectId !== project) throw notFound(uuid)
  return arq
}

/**
 * The views of `arqs`; from 2.10 each with `state_reason`: why a BindFailed or UnbindFailed one
 * failed, from its newest failure event while the outbox keeps it (src/db/reads/arq-reasons.ts),
 * else null.
 */
async function viewsOf(
  { db, baseUrl }: Pick<V2Env, 'db' | 'baseUrl'>,
  request: FastifyRequest,
  arqs: ArqDetail[],
) {
  const base = baseUrl(request)
  const views = arqs.map((a) => arqView(a, base))
  if (request.apiMinor < 10) return views
  const failed = arqs.filter((a) => FAILED_ARQ_STATES.includes(a.state)).map((a) => a.uuid)
  const reasons =
    failed.length === 0 ? new Map<string, string>() : await arqFailureReasons(db, failed)
  return views.map((v) => ({ ...v, state_reason: reasons.get(v.uuid) ?? null }))
}

/** Does a list ask for a page (limit, marker or sort)? */
const isPaged = (paging: object) => Object.keys(paging).length > 0

/** Binds or unbinds (PATCH), with a service token, the requests the caller may see: 202. */
async function patch(
  env: Pick<V2Env, 'db' | 'conductor'>,
  request: FastifyRequest,
  reply: FastifyReply,
  pathUuid?: string,
) {
  const parsed = parseArqPatch(request.body as ArqPatchBody, {
    apiMinor: request.apiMinor,
    isAdmin: request.ctx.isAdmin,
    ...(pathUuid === undefined ? {} : { pathUuid }),
  })
  requireServiceToken(
    request.ctx,
    parsed.kind === 'bind' ? 'binding accelerator requests' : 'unbinding accelerator requests',
  )
  // An admin sees every request: the conductor itself refuses a missing one (404 ARQ_NOT_FOUND,
  // the same error) before it changes anything, so only a project-scoped caller's are read here.
  if (visibleProject(request.ctx) !== undefined)
    for (const uuid of parsed.kind === 'bind' ? Object.keys(parsed.bindings) : parsed.uuids)
      await visible(env, request.ctx, uuid)
  // A key of this request's own: the conductor answers the same bind redelivered by RabbitMQ from
  // its first run, and still refuses another request's identical bind (docs/arqs.md).
  if (parsed.kind === 'bind')
    await env.conductor.bindArqs({ bindings: parsed.bindings, bindId: newUuid() })
  else await env.conductor.unbindArqs({ uuids: parsed.uuids })
  // 202 with no body, as OpenStack Cyborg answers (binding is done, or failed, by now).
  return reply.code(202).send()
}

/**
 * Deletes requests by uuid: a missing or another project's one is named in a 404 (after the rest
 * are deleted, as OpenStack Cyborg does); deleting a bound one needs a service token.
 */
async function deleteByUuid(
  env: Pick<V2Env, 'db' | 'conductor'>,
  ctx: RequestContext,
  uuids: string[],
) {
  const found = await Promise.all(uuids.map((u) => visible(env, ctx, u).catch(() => undefined)))
  if (found.some((a) => a?.instanceUuid))
    requireServiceToken(ctx, 'deleting a bound accelerator request')
  const mine = found.filter((a) => a !== undefined).map((a) => a.uuid)
  // A key of this request's own: the same delete redelivered by RabbitMQ answers as its first run
  // did, not 404 for the requests that run deleted (docs/arqs.md, "Redelivered deletes").
  if (mine.length > 0) await env.conductor.deleteArqs({ uuids: mine, deleteId: newUuid() })
  const missing = uuids.filter((u) => !mine.includes(u))
  if (missing.length > 0)
    throw new NotFoundError(`accelerator request ${missing.join(', ')} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuids: missing },
    })
}

export function arqRoutes(app: FastifyInstance, env: V2Env): void {
  const { db, conductor, maxArqsPerRequest } = env
  resource(app, '/accelerator_requests', {
    POST: {
      policy: 'cyborg:arq:create',
      doc: docs.createArqs,
      schema: { body: ArqCreateBody },
      handler: async (request, reply) => {
        const { device_profile_name: name } = request.body as Static<typeof ArqCreateBody>
        if (name === '')
          throw new NotFoundError(
            'Device Profile not found with name="" (device_profile_name is empty)',
            {
              code: 'DEVICE_PROFILE_NOT_FOUND',
              details: { field: 'device_profile_name', name },
            },
          )
        const arqs = await conductor.createArqs({
          deviceProfileName: name,
          projectId: request.ctx.projectId ?? null,
          maxArqs: maxArqsPerRequest,
          createId: newUuid(), // this request's own: a redelivery makes no second set (docs/arqs.md)
        })
        const views = await viewsOf(
          env,
          request,
          arqs.map((a) => ({ ...a, deviceProfileName: name, attachHandle: null })),
        )
        return reply.code(201).send({ arqs: views })
      },
    },
    GET: {
      policy: 'cyborg:arq:get_all',
      doc: docs.listArqs,
      // A compiled serializer for the list: about half the time of JSON.stringify on 1,000 ARQs.
      schema: { response: { 200: ArqListView } },
      handler: async (request, reply) => {
        const query = request.query as QueryOf<typeof docs.ListArqsQuery>
        const instanceUuid = query.instance?.toLowerCase()
        const bindState = query.bind_state
        const paging = pagingOf<(typeof ARQ_SORT_KEYS)[number]>(query)
        // Nova waits while any ARQ of its instance is still binding: 423 Locked, no body.
        const projectId = visibleProject(request.ctx)
        if (instanceUuid !== undefined && bindState === 'resolved' && !isPaged(paging)) {
          // Nova's poll, unpaged: one read of all the instance's requests answers both (issue 28).
          const all = await listArqDetails(db, { instanceUuid, projectId })
          if (all.some((a) => !RESOLVED_STATES.includes(a.state))) return reply.code(423).send()
          return { arqs: await viewsOf(env, request, all) }
        }
        if (
          instanceUuid !== undefined &&
          bindState === 'resolved' &&
          (await hasUnresolvedArqs(db, instanceUuid, projectId))
        ) {
          return reply.code(423).send()
        }
        const filter = {
          instanceUuid,
          projectId,
          states: bindState === undefined ? undefined : RESOLVED_STATES,
          ...paging,
        }
        const arqs = await listArqDetails(db, filter).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        return { arqs: await viewsOf(env, request, arqs) }
      },
    },
    PATCH: {
      policy: 'cyborg:arq:update',
      doc: docs.patchArqs,
      schema: { body: ArqPatchBody },
      handler: async (request, reply) => patch(env, request, reply),
    },
    DELETE: {
      policy: 'cyborg:arq:delete',
      doc: docs.deleteArqs,
      handler: async (request, reply) => {
        const query = request.query as QueryOf<typeof docs.DeleteArqsQuery>
        const instanceUuid = query.instance?.toLowerCase()
        const uuids = commaList(query.arqs)
        if ((instanceUuid === undefined) === (uuids === undefined)) {
          throw new InvalidInputError(
            "Invalid input for fields 'instance' and 'arqs': give exactly one of ?instance=<uuid> or ?arqs=<uuid>,<uuid>",
            { details: { field: 'instance' } },
          )
        }
        if (instanceUuid !== undefined) {
          requireServiceToken(request.ctx, "deleting an instance's accelerator requests")
          const projectId = visibleProject(request.ctx)
          await conductor.deleteArqs(
            projectId === undefined ? { instanceUuid } : { instanceUuid, projectId },
          )
        } else {
          await deleteByUuid(env, request.ctx, [...new Set(uuids!.map((u) => u.toLowerCase()))])
        }
        return reply.code(204).send()
      },
    },
  })

  resource(app, '/accelerator_requests/:uuid', {
    GET: {
      policy: 'cyborg:arq:get_one',
      doc: docs.getArq,
      handler: async (request: FastifyRequest) => {
        const arq = await visible(env, request.ctx, uuidParam(request))
        return (await viewsOf(env, request, [arq]))[0]
      },
    },
    PATCH: {
      policy: 'cyborg:arq:update',
      doc: docs.patchArq,
      schema: { body: ArqPatchBody },
      handler: async (request, reply) => patch(env, request, reply, uuidParam(request)),
    },
    DELETE: {
      policy: 'cyborg:arq:delete',
      doc: docs.deleteArq,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        await deleteByUuid(env, request.ctx, [uuidParam(request)])
        return reply.code(204).send()
      },
    },
  })
}
