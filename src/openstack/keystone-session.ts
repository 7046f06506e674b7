/**
 * Outbound Keystone auth: a project-scoped (or system-scoped) token from Keystone v3 password auth
 * (`POST {auth_url}/auth/tokens`), cached and renewed before it expires, plus the endpoint of a
 * service from the catalog that came with it. One authentication is in flight at a time: callers
 * that arrive meanwhile share it. Neither the token nor the password is ever logged or put in an
 * error message. See docs/auth-outbound.md.
 */
import { UnavailableError } from '../domain/errors.js'
import { exchangeFailure, readAnswerText } from './answer-limit.js'

export interface PasswordAuth {
  /** Keystone's v3 endpoint, e.g. http://keystone:5000/v3 (`/v3` is added when missing). */
  authUrl: string
  username: string
  password: string
  projectName: string
  /** A system-scoped token instead (keystoneauth's `system_scope`, e.g. `all`): projectName is then unused. */
  systemScope?: string | undefined
  /** @default 'Default' */
  userDomainName?: string
  /** @default 'Default' */
  projectDomainName?: string
  timeoutMs: number
  /** The clock, in ms since the epoch. @default Date.now */
  now?: () => number
}

/** Which catalog endpoint to pick (keystoneauth's service_type, valid_interfaces, region_name). */
export interface CatalogQuery {
  serviceType: string
  /** Tried in order: `public`, `internal`, `admin` (keystoneauth's `publicURL` spelling works too). */
  interfaces: readonly string[]
  region?: string | undefined
}

export interface KeystoneSession {
  /** The token URL, for messages. */
  readonly tokenUrl: string
  /** A valid token: the cached one, or a new one when none is cached or it is about to expire. */
  token(): Promise<string>
  /** A service refused `token` (401): forget it, so that the next `token()` authenticates again. */
  invalidate(token: string): void
  /** The URL of the catalog entry `query` names, from the current token's catalog. */
  endpoint(query: CatalogQuery): Promise<string>
}

interface Cached {
  token: string
  /** When to authenticate again: before expiry by 10 % of the token's life or 5 minutes, whichever is smaller. */
  renewAt: number
  catalog: RawService[]
}

interface RawService {
  type?: string
  endpoints?: {
    interface?: string
    region?: string | null
    region_id?: string | null
    url?: string
  }[]
}

const MAX_MARGIN_MS = 5 * 60_000

export function createKeystoneSession(auth: PasswordAuth): KeystoneSession {
  const base = auth.authUrl.replace(/\/+$/, '')
  const tokenUrl = `${/\/v3$/.test(base) ? base : `${base}/v3`}/auth/tokens`
  const now = auth.now ?? Date.now
  let cached: Cached | undefined
  let inflight: Promise<Cached> | undefined

  const current = async (): Promise<Cached> => {
    if (cached && now() < cached.renewAt) return cached
    inflight ??= authenticate(auth, tokenUrl, now).finally(() => {
      inflight = undefined
    })
    const fresh = await inflight
    cached = fresh
    return fresh
  }

  return {
    tokenUrl,
    token: async () => (await current()).token,
    invalidate(token) {
      if (cached?.token === token) cached = undefined
    },
    async endpoint(query) {
      return pickEndpoint((await current()).catalog, query)
    },
  }
}

async function authenticate(
  auth: PasswordAuth,
  tokenUrl: string,
  now: () => number,
): Promise<Cached> {
  const body = {
    auth: {
      identity: {
        methods: ['password'],
        password: {
          user: {
            name: auth.username,
            password: auth.password,
            domain: { name: auth.userDomainName ?? 'Default' },
          },
        },
      },
      scope:
        auth.systemScope === undefined
          ? {
              project: {
                name: auth.projectName,
                domain: { name: auth.projectDomainName ?? 'Default' },
              },
            }
          : { system: { [auth.systemScope]: true } },
    },
  }
  const what = `Keystone POST ${tokenUrl}`
  const unavailable = (err: unknown) =>
    new UnavailableError(`${what}: ${exchangeFailure(err, auth.timeoutMs)}`, {
      code: 'KEYSTONE_UNAVAILABLE',
      cause: err,
    })
  let res: Response
  let text: string
  try {
    // One time limit for the whole exchange, and a bounded body (answer-limit.ts).
    res = await fetch(tokenUrl, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(auth.timeoutMs),
    })
    text = await readAnswerText(res.body)
  } catch (err) {
    throw unavailable(err)
  }
  if (res.status === 401 || res.status === 403) {
    throw new UnavailableError(
      `${what} answered ${res.status}: Keystone refused user "${auth.username}" (domain ${auth.userDomainName ?? 'Default'}) ` +
        `for project "${auth.projectName}" (domain ${auth.projectDomainName ?? 'Default'}); check the username, password and project`,
      { code: 'KEYSTONE_AUTH_FAILED', details: { status: res.status } },
    )
  }
  if (res.status !== 201 && res.status !== 200) {
    throw new UnavailableError(`${what} answered ${res.status}: ${text.slice(0, 300)}`, {
      code: 'KEYSTONE_UNAVAILABLE',
    })
  }
  const token = res.headers.get('x-subject-token')
  const parsed = safeJson(text) as
    { token?: { expires_at?: string; issued_at?: string; catalog?: RawService[] } } | undefined
  const expires = Date.parse(parsed?.token?.expires_at ?? '')
  if (!token || Number.isNaN(expires)) {
    throw new UnavailableError(
      `${what} answered ${res.status} without X-Subject-Token or token.expires_at`,
      {
        code: 'KEYSTONE_UNAVAILABLE',
      },
    )
  }
  const issued = Date.parse(parsed?.token?.issued_at ?? '')
  // The life as Keystone states it; without issued_at, as seen from here.
  const life = expires - (Number.isNaN(issued) ? now() : issued)
  const margin = Math.min(Math.max(life, 0) / 10, MAX_MARGIN_MS)
  return { token, renewAt: expires - margin, catalog: parsed?.token?.catalog ?? [] }
}

/** The first endpoint of `query.serviceType` with an interface of `query.interfaces` (in that order) in the region. */
export function pickEndpoint(catalog: RawService[], query: CatalogQuery): string {
  const services = catalog.filter((s) => s.type === query.serviceType)
  const wanted = query.interfaces.map(normalInterface)
  for (const iface of wanted) {
    for (const service of services) {
      for (const ep of service.endpoints ?? []) {
        if (normalInterface(ep.interface ?? '') !== iface || !ep.url) continue
        if (query.region && ep.region_id !== query.region && ep.region !== query.region) continue
        return ep.url.replace(/\/+$/, '')
      }
    }
  }
  const where = `interface ${wanted.join(' or ')}${query.region ? ` in region ${query.region}` : ''}`
  throw new UnavailableError(
    services.length === 0
      ? `the Keystone catalog has no service of type ${query.serviceType}; register one, or set endpoint_override`
      : `the Keystone catalog has no ${query.serviceType} endpoint with ${where}; check valid_interfaces and region_name, or set endpoint_override`,
    { code: 'ENDPOINT_NOT_FOUND', details: { serviceType: query.serviceType } },
  )
}

/** `publicURL` → `public`, as keystoneauth accepts both spellings. */
const normalInterface = (name: string) => name.replace(/URL$/, '').toLowerCase()

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}
