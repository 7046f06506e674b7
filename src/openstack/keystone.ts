/**
 * A small Keystone v3 client on the project's HTTP helper: token validation (`GET
 * /v3/auth/tokens` with the caller's own token in X-Auth-Token and the token to check in
 * X-Subject-Token), revocation, and a user's own password login for the dashboard (`POST
 * /v3/auth/tokens`; the API's own service token is keystone-session.ts's).
 * Tokens travel in headers only: no message, error or log line of this module contains one.
 */
import { UnavailableError } from '../domain/errors.js'
import { OpenStackHttpError, requestJson, type ServiceEndpoint } from './http.js'

export interface KeystoneEndpoint {
  /** The v3 URL, e.g. http://127.0.0.1:5000/v3 (a URL without /v3 gets it appended). */
  authUrl: string
  timeoutMs: number
  /** Counts calls, for tests and benchmarks (method, path, status; 0 when unreachable). */
  onCall?: (method: string, path: string, status: number) => void
}

export interface PasswordCredentials {
  username: string
  password: string
  userDomainName: string
  /** The project the token is scoped to. */
  projectName: string
  projectDomainName: string
}

export interface CatalogEntry {
  type: string
  name: string
  endpoints: { interface: string; region: string | null; url: string }[]
}

/** What Keystone says about a token. */
export interface TokenInfo {
  userId: string
  userName: string
  /** null for a token not scoped to a project (unscoped, domain or system scope). */
  projectId: string | null
  projectName: string | null
  /** Role names, as Keystone lists them (implied roles included). */
  roles: string[]
  /** Whether the token is system-scoped. */
  system: boolean
  /** Epoch milliseconds. */
  expiresAt: number
  catalog: CatalogEntry[]
}

/** The token was refused: invalid, expired or revoked (Keystone's 404 or 401). */
export class InvalidTokenError extends Error {
  constructor(readonly status: number) {
    super(`Keystone refused the token (${status})`)
    this.name = 'InvalidTokenError'
  }
}

/** The v3 base URL of an auth_url given with or without `/v3`. */
export function v3Url(authUrl: string): string {
  const trimmed = authUrl.replace(/\/+$/, '')
  return /\/v3$/.test(trimmed) ? trimmed : `${trimmed}/v3`
}

function endpoint(ep: KeystoneEndpoint): ServiceEndpoint {
  return {
    service: 'Keystone',
    url: v3Url(ep.authUrl),
    headers: {},
    timeoutMs: ep.timeoutMs,
    ...(ep.onCall ? { onCall: ep.onCall } : {}),
  }
}

/** Wraps "unreachable" so that the message says what could not be done. */
async function reach<T>(what: string, ep: KeystoneEndpoint, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    if (err instanceof UnavailableError) {
      throw new UnavailableError(
        `${what}: Keystone at ${v3Url(ep.authUrl)} is unavailable (${err.message})`,
        {
          code: 'KEYSTONE_UNAVAILABLE',
          cause: err,
        },
      )
    }
    throw err
  }
}

/**
 * Validates `subjectToken` with `serviceToken` (`GET /v3/auth/tokens`).
 * @throws InvalidTokenError: 404 when the subject token is invalid, expired or revoked; 401 when
 * Keystone refused `serviceToken` itself (renew it and ask again). UnavailableError when Keystone
 * cannot be reached or fails.
 */
export async function validateToken(
  ep: KeystoneEndpoint,
  serviceToken: string,
  subjectToken: string,
): Promise<TokenInfo> {
  return reach('Cannot validate the token', ep, async () => {
    try {
      const answer = await requestJson(endpoint(ep), 'GET', '/auth/tokens', undefined, {
        'x-auth-token': serviceToken,
        'x-subject-token': subjectToken,
      })
      return tokenInfo(answer.body)
    } catch (err) {
      if (err instanceof OpenStackHttpError && (err.status === 404 || err.status === 401))
        throw new InvalidTokenError(err.status)
      // Keystone answers 400 for a subject token it cannot even parse in some versions.
      if (err instanceof OpenStackHttpError && err.status === 400) throw new InvalidTokenError(404)
      throw err
    }
  })
}

/** Revokes `subjectToken` (`DELETE /v3/auth/tokens`). */
export async function revokeToken(
  ep: KeystoneEndpoint,
  authToken: string,
  subjectToken: string,
): Promise<void> {
  await reach('Cannot revoke the token', ep, () =>
    requestJson(endpoint(ep), 'DELETE', '/auth/tokens', undefined, {
      'x-auth-token': authToken,
      'x-subject-token': subjectToken,
    }),
  )
}

/** A user's password login: the new token and what Keystone says about it. */
export interface IssuedToken {
  token: string
  info: TokenInfo
}

/**
 * Password auth for `creds`, scoped to its project (`POST /v3/auth/tokens`): what the dashboard's
 * login asks on the user's behalf. Neither the password nor the token is put in any message.
 * @throws InvalidTokenError(401) when Keystone refuses the user, password, domain or project;
 * UnavailableError (naming Keystone) for anything else that goes wrong.
 */
export async function issueToken(
  ep: KeystoneEndpoint,
  creds: PasswordCredentials,
): Promise<IssuedToken> {
  const body = {
    auth: {
      identity: {
        methods: ['password'],
        password: {
          user: {
            name: creds.username,
            password: creds.password,
            domain: { name: creds.userDomainName },
          },
        },
      },
      scope: { project: { name: creds.projectName, domain: { name: creds.projectDomainName } } },
    },
  }
  return reach('Cannot log in', ep, async () => {
    let answer
    try {
      answer = await requestJson(endpoint(ep), 'POST', '/auth/tokens', body)
    } catch (err) {
      if (err instanceof OpenStackHttpError && err.status === 401) throw new InvalidTokenError(401)
      // Keystone's own detail is left out: a schema error of its may quote the password.
      if (err instanceof OpenStackHttpError)
        throw new UnavailableError(`Keystone answered ${err.status} to the login`)
      throw err
    }
    const token = answer.headers.get('x-subject-token')
    if (!token) throw new UnavailableError('Keystone answered a login without X-Subject-Token')
    return { token, info: tokenInfo(answer.body) }
  })
}

interface RawToken {
  token?: {
    user?: { id?: string; name?: string }
    project?: { id?: string; name?: string }
    system?: unknown
    roles?: { name?: string }[]
    expires_at?: string
    catalog?: {
      type?: string
      name?: string
      endpoints?: {
        interface?: string
        region?: string | null
        region_id?: string | null
        url?: string
      }[]
    }[]
  }
}

function tokenInfo(body: unknown): TokenInfo {
  const t = (body as RawToken | null)?.token
  const expiresAt = Date.parse(t?.expires_at ?? '')
  if (!t?.user?.id || Number.isNaN(expiresAt)) {
    throw new UnavailableError('Keystone answered a token document without user or expires_at')
  }
  return {
    userId: t.user.id,
    userName: t.user.name ?? '',
    projectId: t.project?.id ?? null,
    projectName: t.project?.name ?? null,
    roles: (t.roles ?? []).map((r) => r.name).filter((n): n is string => typeof n === 'string'),
    system: t.system !== undefined && t.system !== null,
    expiresAt,
    catalog: (t.catalog ?? []).map((c) => ({
      type: c.type ?? '',
      name: c.name ?? '',
      endpoints: (c.endpoints ?? []).map((e) => ({
        interface: e.interface ?? '',
        region: e.region_id ?? e.region ?? null,
        url: e.url ?? '',
      })),
    })),
  }
}
