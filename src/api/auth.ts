/**
 * Inbound authentication: one `onRequest` hook that sets `request.ctx` (src/domain/request-context.ts)
 * from an {@link Authenticator} — noauth (every caller is an admin of one fixed project) or
 * Keystone (src/api/keystone-auth.ts). `GET /`, the version documents `/v1` and `/v2`, their
 * OpenAPI documents (`/v1/openapi.json`, `/v2/openapi.json`), `/healthcheck`, `/metrics` and the
 * dashboard's shell, assets and login (`/dashboard`, `/dashboard/…`, but not
 * `/dashboard/session`) need no token. Policy decisions are not made here: the policy layer reads ctx.
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import { NotAuthenticatedError } from '../domain/errors.js'
import { freezeContext, type RequestContext } from '../domain/request-context.js'
import type { IssuedToken, PasswordCredentials, TokenInfo } from '../openstack/keystone.js'
import { noauthContext } from './context.js'

export const AUTH_TOKEN_HEADER = 'x-auth-token'
export const SERVICE_TOKEN_HEADER = 'x-service-token'

export interface Authenticator {
  readonly strategy: 'keystone' | 'noauth'
  /**
   * The caller of a request carrying `token` (X-Auth-Token) and `serviceToken` (X-Service-Token).
   * Synchronous when the answer is known (noauth, a cached token), else a promise.
   * @throws NotAuthenticatedError for a missing, invalid, expired or revoked token;
   *   UnavailableError when Keystone cannot be asked
   */
  authenticate(
    token: string | undefined,
    serviceToken: string | undefined,
  ): RequestContext | Promise<RequestContext>
  /** The `WWW-Authenticate` value sent with a 401, e.g. `Keystone uri="http://keystone:5000/v3"`. */
  readonly wwwAuthenticate?: string
  /**
   * A user's password login on their behalf (the dashboard's `POST /dashboard/login`); Keystone
   * only. @throws InvalidTokenError(401) for refused credentials; UnavailableError
   */
  login?(creds: PasswordCredentials): Promise<IssuedToken>
  /** What is known of `token` (its user's and project's names), when the authenticator keeps it. */
  describe?(token: string): TokenInfo | undefined
}

/** The context of requests to paths that need no token. */
export const ANONYMOUS_CONTEXT: RequestContext = freezeContext({
  userId: null,
  projectId: null,
  roles: [],
  isAdmin: false,
  systemScope: false,
  serviceRoles: [],
  serviceToken: false,
  authStrategy: 'noauth',
})

/** `[api] auth_strategy = noauth`: every caller is an admin of `projectId` (src/api/context.ts). */
export function noauthAuthenticator(projectId: string): Authenticator {
  const ctx = noauthContext(projectId)
  return { strategy: 'noauth', authenticate: () => ctx }
}

const PUBLIC_PATHS = new Set([
  '/',
  '/v1',
  '/v2',
  '/v1/openapi.json',
  '/v2/openapi.json',
  '/healthcheck',
  '/metrics',
])

/** Whether `url` (path and query) needs no token. */
export function isPublicPath(url: string): boolean {
  const q = url.indexOf('?')
  let p = q < 0 ? url : url.slice(0, q)
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  // The dashboard's shell, assets and login hold no data: the page sends the caller's token
  // itself. Its session (who the caller is, what they may do) is the caller's own: it needs one.
  if (p === '/dashboard/session') return false
  return PUBLIC_PATHS.has(p) || p === '/dashboard' || p.startsWith('/dashboard/')
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name]
  const s = Array.isArray(v) ? v[0] : v
  return s === undefined || s === '' ? undefined : s
}

/** Installs the hook; call after the request-id hook (src/api/context.ts). */
export function installAuth(app: FastifyInstance, auth: Authenticator): void {
  const fail = (reply: FastifyReply, done: HookHandlerDoneFunction, err: unknown) => {
    if (err instanceof NotAuthenticatedError && auth.wwwAuthenticate)
      reply.header('www-authenticate', auth.wwwAuthenticate)
    done(err as Error)
  }
  app.addHook(
    'onRequest',
    (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (isPublicPath(request.url)) {
        request.ctx = ANONYMOUS_CONTEXT
        return done()
      }
      let result: RequestContext | Promise<RequestContext>
      try {
        result = auth.authenticate(
          header(request, AUTH_TOKEN_HEADER),
          header(request, SERVICE_TOKEN_HEADER),
        )
      } catch (err) {
        return fail(reply, done, err)
      }
      if (result instanceof Promise) {
        result.then(
          (ctx) => {
            request.ctx = ctx
            done()
          },
          (err: unknown) => fail(reply, done, err),
        )
        return
      }
      request.ctx = result
      done()
    },
  )
}
