/**
 * The dashboard's login and session (docs/dashboard.md, "Auth"). `POST /dashboard/login` asks
 * Keystone for a project-scoped token with the user's name, password and project, so that the
 * browser never needs Keystone's address; the token is answered in the body only (no cookie),
 * and the page keeps it in memory. `GET /dashboard/session` tells the caller who they are and
 * which of the dashboard's actions the policy allows them, so the page offers only those (the
 * API enforces them anyway). Neither the password nor a token is ever logged or echoed.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { InvalidInputError, NotAuthenticatedError } from '../../domain/errors.js'
import { InvalidTokenError } from '../../openstack/keystone.js'
import type { Enforcer } from '../../policy/index.js'
import { AUTH_TOKEN_HEADER, type Authenticator } from '../auth.js'
import { ApiError } from '../errors.js'
import { LOGIN_BODY_LIMIT, LoginBody, loginDoc, sessionDoc } from './session-schemas.js'

/** The rules the dashboard asks about (web/session.ts's `useCan`). */
export const DASHBOARD_RULES = [
  'cyborg:status:get',
  'cyborg:device:get_all',
  'cyborg:device:get_one',
  'cyborg:device:disable',
  'cyborg:device:enable',
  'cyborg:device:ready',
  'cyborg:device:clean',
  'cyborg:capacity:get',
  'cyborg:arq:get_all',
  'cyborg:custody:get_all',
  'cyborg:device_profile:get_all',
  'cyborg:device_profile:explain',
  'cyborg:event:get_all',
] as const

/** Refused logins allowed per source address within {@link FAILURE_WINDOW_MS}. */
export const MAX_FAILURES = 10
const FAILURE_WINDOW_MS = 60_000
/** Addresses remembered at most; the oldest is forgotten first. */
const MAX_ADDRESSES = 10_000

/** Counts refused logins per address, each for a minute. */
export function createFailureCounter(now: () => number = Date.now) {
  const failures = new Map<string, number[]>()
  const recent = (address: string): number[] => {
    const t = now()
    const kept = (failures.get(address) ?? []).filter((at) => t - at < FAILURE_WINDOW_MS)
    if (kept.length === 0) failures.delete(address)
    else failures.set(address, kept)
    return kept
  }
  return {
    /** Seconds until `address` may try again; 0 when it may now. */
    waitSeconds(address: string): number {
      const kept = recent(address)
      if (kept.length < MAX_FAILURES) return 0
      return Math.max(1, Math.ceil((kept[0]! + FAILURE_WINDOW_MS - now()) / 1000))
    },
    failed(address: string): void {
      const kept = recent(address)
      failures.delete(address)
      failures.set(address, [...kept, now()])
      if (failures.size > MAX_ADDRESSES) failures.delete(failures.keys().next().value!)
    },
  }
}

const WRONG = 'Login refused: the user name, password or project is wrong'

/** Registers `POST /dashboard/login` and `GET /dashboard/session`. */
export function sessionRoutes(
  app: FastifyInstance,
  auth: Authenticator | undefined,
  enforcer: Pick<Enforcer, 'allowed'>,
): void {
  const counter = createFailureCounter()
  app.post(
    '/dashboard/login',
    { schema: { body: LoginBody }, bodyLimit: LOGIN_BODY_LIMIT, config: { doc: loginDoc } },
    async (request: FastifyRequest<{ Body: Static<typeof LoginBody> }>, reply: FastifyReply) => {
      if (auth?.login === undefined)
        throw new InvalidInputError(
          'No login is needed: this API runs with [api] auth_strategy = noauth, every caller is an admin',
        )
      const wait = counter.waitSeconds(request.ip)
      if (wait > 0) {
        reply.header('retry-after', String(wait))
        throw new ApiError(429, `Too many refused logins from this address: try again in ${wait} s`)
      }
      const b = request.body
      let issued
      try {
        issued = await auth.login({
          username: b.username,
          password: b.password,
          projectName: b.project,
          userDomainName: b.user_domain ?? 'Default',
          projectDomainName: b.project_domain ?? 'Default',
        })
      } catch (err) {
        if (!(err instanceof InvalidTokenError)) throw err
        counter.failed(request.ip)
        throw new NotAuthenticatedError(WRONG)
      }
      const { info } = issued
      return reply.header('cache-control', 'no-store').send({
        token: issued.token,
        expires_at: new Date(info.expiresAt).toISOString(),
        user: { id: info.userId, name: info.userName || null },
        project: { id: info.projectId, name: info.projectName },
        roles: info.roles,
      })
    },
  )

  const known = (rule: string, ctx: FastifyRequest['ctx']): boolean => {
    try {
      return enforcer.allowed(rule, ctx)
    } catch {
      // A rule this API does not register (yet): the dashboard does not offer it.
      return false
    }
  }
  app.get(
    '/dashboard/session',
    { config: { doc: sessionDoc, policy: 'cyborg:session:get' } },
    async (request, reply) => {
      const ctx = request.ctx
      const raw = request.headers[AUTH_TOKEN_HEADER]
      const token = Array.isArray(raw) ? raw[0] : raw
      const info = token === undefined ? undefined : auth?.describe?.(token)
      return reply.header('cache-control', 'no-store').send({
        auth_strategy: ctx.authStrategy,
        user: { id: ctx.userId, name: info?.userName || null },
        project: { id: ctx.projectId, name: info?.projectName ?? null },
        roles: [...ctx.roles],
        can: Object.fromEntries(DASHBOARD_RULES.map((rule) => [rule, known(rule, ctx)])),
      })
    },
  )
}
