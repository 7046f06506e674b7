/**
 * Client settings from a keystoneauth-style section (`[placement]`, `[nova]`, `[glance]`,
 * `[service_user]`): which endpoint, which token, and for `auth_type = password` a Keystone
 * session whose token and catalog are fetched at call time (`RequestAuth`).
 */
import { ConfigError } from '../domain/errors.js'
import type { RequestAuth } from './http.js'
import {
  createKeystoneSession,
  type CatalogQuery,
  type KeystoneSession,
} from './keystone-session.js'

/** The options of a keystoneauth-style section (a structural subset of its Config section). */
export interface KeystoneSectionOptions {
  auth_type: 'none' | 'admin_token' | 'password'
  endpoint_override?: string | undefined
  token?: string | undefined
  auth_url?: string | undefined
  username?: string | undefined
  password?: string | undefined
  project_name?: string | undefined
  /** A system-scoped token (`all`) instead of a project-scoped one ([oslo_limit] only). */
  system_scope?: string | undefined
  user_domain_name?: string | undefined
  project_domain_name?: string | undefined
  region_name?: string | undefined
  /** @default ['public'] */
  valid_interfaces?: readonly string[] | undefined
  timeout: number
}

export interface ServiceClientSettings {
  /** endpoint_override, or (auth_type = password without it) a description of the catalog entry. */
  endpoint: string
  /** `admin_token`: the static token. */
  token?: string
  /** `password`: Keystone tokens, and the catalog's endpoint unless endpoint_override is set. */
  auth?: RequestAuth
  timeoutMs: number
}

/**
 * Settings from a section, or null when it names no endpoint and no auth: the service is not used.
 * `serviceType` is the catalog type to look up (placement, compute, image).
 * @throws ConfigError naming the option (`[section] option …`) that is missing or unusable
 */
export function keystoneSettings(
  section: string,
  opts: KeystoneSectionOptions,
  serviceType: string = section,
  /** Sends X-Service-Token from this session too (`[service_user]`, for Nova). */
  serviceUser?: KeystoneSession,
): ServiceClientSettings | null {
  const timeoutMs = opts.timeout * 1000
  if (opts.auth_type === 'password') {
    const session = passwordSession(section, opts)
    const endpoint = opts.endpoint_override
    const catalog: CatalogQuery = {
      serviceType,
      interfaces: interfacesOf(section, opts),
      region: opts.region_name,
    }
    return {
      endpoint: endpoint ?? `the ${serviceType} endpoint of the Keystone catalog`,
      auth: sessionAuth({ endpoint: endpoint ?? catalog, session, serviceUser }),
      timeoutMs,
    }
  }
  if (!opts.endpoint_override) {
    if (opts.auth_type === 'none') return null
    throw new ConfigError(
      `[${section}] endpoint_override is required when auth_type = ${opts.auth_type}; only auth_type = password looks the endpoint up in the Keystone catalog`,
    )
  }
  if (opts.auth_type === 'admin_token' && !opts.token) {
    throw new ConfigError(`[${section}] token is required when auth_type = admin_token`)
  }
  return {
    endpoint: opts.endpoint_override,
    ...(opts.auth_type === 'admin_token' ? { token: opts.token! } : {}),
    ...(serviceUser
      ? { auth: sessionAuth({ endpoint: opts.endpoint_override, serviceUser }) }
      : {}),
    timeoutMs,
  }
}

/** `[service_user]`: the user whose token goes with calls to Nova as X-Service-Token. */
export interface ServiceUserOptions extends Omit<
  KeystoneSectionOptions,
  'auth_type' | 'timeout' | 'endpoint_override' | 'token'
> {
  send_service_user_token: boolean
  auth_type: 'none' | 'password'
}

/**
 * The service user's session, or undefined unless `send_service_user_token` is true.
 * @throws ConfigError naming the option that is missing
 */
export function serviceUserSession(
  opts: ServiceUserOptions,
  timeout: number,
): KeystoneSession | undefined {
  if (!opts.send_service_user_token) return undefined
  if (opts.auth_type !== 'password') {
    throw new ConfigError(
      '[service_user] auth_type must be password when send_service_user_token = true',
    )
  }
  return passwordSession('service_user', { ...opts, timeout })
}

/** A Keystone session from a section with `auth_type = password`. @throws ConfigError naming a missing option */
export function passwordSession(
  section: string,
  opts: Omit<KeystoneSectionOptions, 'auth_type'>,
): KeystoneSession {
  const required = ['auth_url', 'username', 'password', 'project_name'] as const
  for (const name of opts.system_scope ? required.slice(0, 3) : required) {
    if (!opts[name])
      throw new ConfigError(`[${section}] ${name} is required when auth_type = password`)
  }
  return createKeystoneSession({
    authUrl: opts.auth_url!,
    username: opts.username!,
    password: opts.password!,
    projectName: opts.project_name ?? '',
    systemScope: opts.system_scope || undefined,
    userDomainName: opts.user_domain_name ?? 'Default',
    projectDomainName: opts.project_domain_name ?? 'Default',
    timeoutMs: opts.timeout * 1000,
  })
}

const INTERFACES = new Set(['public', 'internal', 'admin'])

function interfacesOf(section: string, opts: KeystoneSectionOptions): string[] {
  const list =
    opts.valid_interfaces && opts.valid_interfaces.length > 0
      ? [...opts.valid_interfaces]
      : ['public']
  for (const name of list) {
    if (!INTERFACES.has(name.replace(/URL$/, '').toLowerCase())) {
      throw new ConfigError(
        `[${section}] valid_interfaces has "${name}": expected public, internal or admin`,
      )
    }
  }
  return list
}

/**
 * A RequestAuth over Keystone sessions: the endpoint (fixed, or looked up in `session`'s catalog),
 * `X-Auth-Token` from `session` and `X-Service-Token` from `serviceUser`, each when given. A 401
 * drops both tokens, so that the retry carries fresh ones.
 */
export function sessionAuth(o: {
  endpoint: string | CatalogQuery
  session?: KeystoneSession | undefined
  serviceUser?: KeystoneSession | undefined
}): RequestAuth {
  const { endpoint, session, serviceUser } = o
  if (typeof endpoint !== 'string' && !session)
    throw new Error('a catalog lookup needs a Keystone session')
  return {
    async prepare() {
      const [url, token, serviceToken] = await Promise.all([
        typeof endpoint === 'string' ? endpoint : session!.endpoint(endpoint),
        session?.token(),
        serviceUser?.token(),
      ])
      const headers: Record<string, string> = {}
      if (token !== undefined) headers['x-auth-token'] = token
      if (serviceToken !== undefined) headers['x-service-token'] = serviceToken
      return { url, headers }
    },
    rejected(headers) {
      if (headers['x-auth-token'] !== undefined) session?.invalidate(headers['x-auth-token'])
      if (headers['x-service-token'] !== undefined)
        serviceUser?.invalidate(headers['x-service-token'])
    },
  }
}
