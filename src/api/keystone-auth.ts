/**
 * `[api] auth_strategy = keystone`: validates X-Auth-Token (and X-Service-Token) against Keystone
 * with the API's own service token, which a KeystoneSession (src/openstack/keystone-session.ts)
 * gets by password auth from `[keystone_authtoken]` and renews before it expires. Validated tokens are cached, keyed by their SHA-256, in an LRU
 * bounded in entries, each until min(token expiry, now + token_cache_time): a revoked token is
 * refused at the latest token_cache_time later. Concurrent requests with one new token share
 * one validation call.
 */
import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { AppError, NotAuthenticatedError, UnavailableError } from '../domain/errors.js'
import { freezeContext, type RequestContext } from '../domain/request-context.js'
import {
  InvalidTokenError,
  issueToken,
  v3Url,
  validateToken,
  type KeystoneEndpoint,
  type IssuedToken,
  type PasswordCredentials,
  type TokenInfo,
} from '../openstack/keystone.js'
import { createKeystoneSession } from '../openstack/keystone-session.js'
import type { Authenticator } from './auth.js'

export interface KeystoneAuthOptions extends KeystoneEndpoint {
  /** The API's own service user. */
  credentials: PasswordCredentials
  /** Sent to clients in WWW-Authenticate; defaults to authUrl. */
  wwwAuthenticateUri?: string | undefined
  serviceTokenRoles: string[]
  serviceTokenRolesRequired: boolean
  /** Longest time a validated token is trusted without asking Keystone again. */
  cacheTimeMs: number
  /** @default 10000 */
  cacheMaxEntries?: number
}

export interface KeystoneAuthenticator extends Authenticator {
  /** Validation calls made to Keystone so far (for tests and benchmarks). */
  readonly validations: number
  /**
   * A user's password login (the dashboard's, src/api/dashboard/session.ts): the new token, which
   * is then known without asking Keystone again.
   * @throws InvalidTokenError(401) when Keystone refuses the credentials; UnavailableError
   */
  login(creds: PasswordCredentials): Promise<IssuedToken>
  /** What Keystone said of `token` when it was validated, if that is still cached. */
  describe(token: string): TokenInfo | undefined
}

interface Validated {
  info: TokenInfo
  /** The context of a request with this X-Auth-Token and no service token. */
  ctx: RequestContext
}

export function createKeystoneAuthenticator(opts: KeystoneAuthOptions): KeystoneAuthenticator {
  const cache = new LRUCache<string, Validated>({ max: opts.cacheMaxEntries ?? 10_000 })
  const inflight = new Map<string, Promise<Validated>>()
  const serviceRoles = new Set(opts.serviceTokenRoles)
  let validations = 0
  // The API's own token: the same cached, renewed-before-expiry session as the outbound clients'.
  const session = createKeystoneSession({
    authUrl: opts.authUrl,
    username: opts.credentials.username,
    password: opts.credentials.password,
    projectName: opts.credentials.projectName,
    userDomainName: opts.credentials.userDomainName,
    projectDomainName: opts.credentials.projectDomainName,
    timeoutMs: opts.timeoutMs,
  })

  const ownToken = (): Promise<string> =>
    session.token().catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'KEYSTONE_AUTH_FAILED') {
        throw new UnavailableError(
          `Cannot validate tokens: Keystone refuses the API's own credentials ([keystone_authtoken] username, password, project_name)`,
          { code: 'KEYSTONE_CREDENTIALS_REFUSED' },
        )
      }
      if (err instanceof UnavailableError) {
        throw new UnavailableError(
          `Cannot get a token: Keystone at ${v3Url(opts.authUrl)} is unavailable (${err.message})`,
          {
            code: 'KEYSTONE_UNAVAILABLE',
            cause: err,
          },
        )
      }
      throw err
    })

  const ask = async (token: string): Promise<TokenInfo> => {
    for (let attempt = 0; ; attempt++) {
      const mine = await ownToken()
      try {
        validations++
        return await validateToken(opts, mine, token)
      } catch (err) {
        // 401: Keystone no longer takes our own token (revoked, keys rotated): renew it once.
        if (err instanceof InvalidTokenError && err.status === 401 && attempt === 0) {
          session.invalidate(mine)
          continue
        }
        throw err
      }
    }
  }

  const keep = (key: string, info: TokenInfo): Validated => {
    const left = info.expiresAt - Date.now()
    if (left <= 0) throw new InvalidTokenError(404)
    const entry = { info, ctx: contextOf(info) }
    const ttl = Math.min(left, opts.cacheTimeMs)
    if (ttl > 0) cache.set(key, entry, { ttl })
    return entry
  }

  const validate = (token: string, what: string): Validated | Promise<Validated> => {
    const key = keyOf(token)
    const hit = cache.get(key)
    if (hit) return hit
    let pending = inflight.get(key)
    if (!pending) {
      pending = ask(token)
        .then((info) => keep(key, info))
        .catch((err: unknown) => {
          if (err instanceof InvalidTokenError) {
            throw new NotAuthenticatedError(`The ${what} is invalid, expired or revoked`, {
              details: { header: what },
            })
          }
          throw err
        })
        .finally(() => inflight.delete(key))
      inflight.set(key, pending)
    }
    return pending
  }

  const combine = (user: Validated, service: Validated): RequestContext => {
    const roles = service.info.roles
    const accepted = !opts.serviceTokenRolesRequired || roles.some((r) => serviceRoles.has(r))
    return freezeContext({
      ...user.ctx,
      roles: [...user.ctx.roles],
      serviceRoles: [...roles],
      serviceToken: accepted,
    })
  }

  return {
    strategy: 'keystone',
    wwwAuthenticate: `Keystone uri="${opts.wwwAuthenticateUri ?? v3Url(opts.authUrl)}"`,
    get validations() {
      return validations
    },
    async login(creds) {
      const issued = await issueToken(opts, creds)
      keep(keyOf(issued.token), issued.info)
      return issued
    },
    describe: (token) => cache.get(keyOf(token))?.info,
    authenticate(token, serviceToken) {
      if (token === undefined)
        throw new NotAuthenticatedError(
          'Authentication required: send a Keystone token in X-Auth-Token',
        )
      const user = validate(token, 'X-Auth-Token')
      if (serviceToken === undefined)
        return user instanceof Promise ? user.then((v) => v.ctx) : user.ctx
      const service = validate(serviceToken, 'X-Service-Token')
      if (!(user instanceof Promise) && !(service instanceof Promise)) return combine(user, service)
      return Promise.all([user, service]).then(([u, s]) => combine(u, s))
    },
  }
}

const keyOf = (token: string): string => createHash('sha256').update(token).digest('base64')

function contextOf(info: TokenInfo): RequestContext {
  return freezeContext({
    userId: info.userId,
    projectId: info.projectId,
    roles: [...info.roles],
    isAdmin: info.roles.includes('admin'),
    systemScope: info.system,
    serviceRoles: [],
    serviceToken: false,
    authStrategy: 'keystone',
  })
}
