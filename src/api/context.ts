/**
 * The identity hook: every request gets its request id echoed back and a caller context.
 * That is a noauth admin unless an authenticator (src/api/auth.ts) replaces it.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { freezeContext, type RequestContext } from '../domain/request-context.js'
import { UUID_PATTERN } from '../domain/ids.js'

export const REQUEST_ID_HEADER = 'x-openstack-request-id'
const REQUEST_ID_RE = new RegExp(`^req-${UUID_PATTERN}$`)

/** The project of noauth callers when nothing else is configured (`[api] noauth_project_id`'s default). */
export const NOAUTH_PROJECT_ID = '00000000-0000-0000-0000-000000000000'

/**
 * A noauth caller: an admin (with every project role) of `projectId`, whose calls count as coming
 * with a service token, since noauth checks none. Frozen, so one object serves every request.
 */
export function noauthContext(projectId: string): RequestContext {
  return freezeContext({
    projectId,
    userId: null,
    roles: ['admin', 'manager', 'member', 'reader', 'service'],
    isAdmin: true,
    systemScope: false,
    serviceRoles: ['service'],
    serviceToken: true,
    authStrategy: 'noauth',
  })
}

/** No authenticator configured: a noauth caller of the default project. */
export const NOAUTH_CONTEXT: RequestContext = noauthContext(NOAUTH_PROJECT_ID)

/** The request id: the caller's `X-OpenStack-Request-ID` when it is a valid `req-<uuid>`, else a new one. */
export function requestId(raw: IncomingMessage): string {
  const given = raw.headers[REQUEST_ID_HEADER]
  return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : `req-${randomUUID()}`
}

/** Root `onRequest` hook: echoes the request id and sets `request.ctx`. */
export function identify(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  reply.header(REQUEST_ID_HEADER, request.id)
  request.ctx = NOAUTH_CONTEXT
  done()
}
