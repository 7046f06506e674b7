/**
 * The identity hook: every request gets its request id echoed back and a caller context.
 * That is an admin without a project unless an authenticator (src/api/auth.ts) replaces it.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { freezeContext, type RequestContext } from '../domain/request-context.js'

export const REQUEST_ID_HEADER = 'x-openstack-request-id'
const REQUEST_ID_RE = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** No authenticator configured: an admin without project or user. Frozen, so one object serves every request. */
export const NOAUTH_CONTEXT: RequestContext = freezeContext({
  projectId: null,
  userId: null,
  roles: ['admin'],
  isAdmin: true,
  systemScope: false,
  serviceRoles: [],
  serviceToken: false,
  authStrategy: 'noauth',
})

/** The request id: the caller's `X-OpenStack-Request-ID` when it is a valid `req-<uuid>`, else a new one. */
export function requestId(raw: IncomingMessage): string {
  const given = raw.headers[REQUEST_ID_HEADER]
  return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : `req-${randomUUID()}`
}

/** Root `onRequest` hook: echoes the request id and sets `request.ctx`. */
export function identify(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header(REQUEST_ID_HEADER, request.id)
  request.ctx = NOAUTH_CONTEXT
  done()
}
