/**
 * A real OpenStack Keystone for one test file: Debian's keystone started by scripts/keystone.sh
 * on a free loopback port, with its own SQLite database, stopped after. Start it once per file
 * (the first start bootstraps for ~15 s). Without the package the tests skip, unless
 * CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 *
 * The helpers speak Keystone's REST API with fetch (the openstack CLI takes seconds per call):
 * projects, users with roles, the personas of the RBAC tests, and tokens.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import type { KeystoneAuthOptions } from '../../../src/api/keystone-auth.js'
import { freePort, ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/keystone.sh')
export const ADMIN_PASSWORD = 'secret'
/** Password of every user the helpers create. */
export const USER_PASSWORD = 'pw-of-a-test-user'

export type Persona = 'admin' | 'manager' | 'member' | 'reader' | 'service' | 'other'

export interface RunningKeystone {
  /** The v3 URL, e.g. http://127.0.0.1:40123/v3. */
  url: string
  /** An admin token (project admin), renewed when it is near expiry. */
  adminToken(): Promise<string>
  createProject(name: string): Promise<string>
  /** The id of role `name`, created when missing (Zed's bootstrap has admin, member and reader). */
  role(name: string): Promise<string>
  /** A user in domain Default with `roles` on `projectId`; password {@link USER_PASSWORD}. */
  createUser(name: string, projectId: string, roles: string[]): Promise<string>
  /** Password auth scoped to `projectName` → the token (X-Subject-Token). */
  issueToken(username: string, projectName: string, password?: string): Promise<string>
  revokeToken(token: string): Promise<void>
  /**
   * Registers a service of `type` (named `name`) in the catalog with a `public` endpoint at `url`
   * in region RegionOne, as `openstack service create` + `openstack endpoint create` would.
   * @returns the service id
   */
  registerEndpoint(type: string, name: string, url: string): Promise<string>
  /** Stops Keystone (the directory stays: `start` brings the same one back). */
  halt(): Promise<void>
  start(): Promise<void>
  /** Stops it and removes its directory. */
  stop(): Promise<void>
}

/** Why the Keystone tests cannot run here, or undefined when they can. */
export async function keystoneSkip(): Promise<string | undefined> {
  try {
    await access('/usr/bin/keystone-wsgi-public')
    return undefined
  } catch {
    const why = 'keystone is not installed (run scripts/ci-services.sh as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

async function call(
  url: string,
  method: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(token === undefined ? {} : { 'x-auth-token': token }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!res.ok)
    throw new Error(
      `Keystone ${method} ${url.replace(/^.*\/v3/, '/v3')} answered ${res.status}: ${(await res.text()).slice(0, 300)}`,
    )
  return res
}

export async function startKeystone(): Promise<RunningKeystone> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-keystone-'))
  const port = await freePort()
  const up = async () => {
    const { stdout } = await run('bash', [SCRIPT, 'up', dir, String(port)], { timeout: 120_000 })
    return stdout.trim().split('\n').pop()!
  }
  const url = await up()
  let admin: { token: string; until: number } | undefined
  const roles = new Map<string, string>()

  const issueToken = async (username: string, projectName: string, password = USER_PASSWORD) => {
    const res = await call(`${url}/auth/tokens`, 'POST', undefined, {
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: username, domain: { id: 'default' }, password } },
        },
        scope: { project: { name: projectName, domain: { id: 'default' } } },
      },
    })
    await res.body?.cancel()
    return res.headers.get('x-subject-token')!
  }
  const adminToken = async () => {
    if (!admin || Date.now() > admin.until) {
      admin = {
        token: await issueToken('admin', 'admin', ADMIN_PASSWORD),
        until: Date.now() + 30 * 60_000,
      }
    }
    return admin.token
  }
  const post = async (p: string, body: unknown) =>
    (await call(`${url}${p}`, 'POST', await adminToken(), body)).json() as Promise<
      Record<string, { id: string }>
    >
  const role = async (name: string) => {
    if (roles.size === 0) {
      const listed = (await (await call(`${url}/roles`, 'GET', await adminToken())).json()) as {
        roles: { id: string; name: string }[]
      }
      for (const r of listed.roles) roles.set(r.name, r.id)
    }
    let id = roles.get(name)
    if (id === undefined) {
      id = (await post('/roles', { role: { name } })).role!.id
      roles.set(name, id)
    }
    return id
  }

  return {
    url,
    adminToken,
    async createProject(name) {
      return (await post('/projects', { project: { name, domain_id: 'default' } })).project!.id
    },
    role,
    async createUser(name, projectId, roleNames) {
      const id = (
        await post('/users', {
          user: {
            name,
            domain_id: 'default',
            password: USER_PASSWORD,
            default_project_id: projectId,
          },
        })
      ).user!.id
      for (const r of roleNames) {
        const res = await call(
          `${url}/projects/${projectId}/users/${id}/roles/${await role(r)}`,
          'PUT',
          await adminToken(),
        )
        await res.body?.cancel()
      }
      return id
    },
    issueToken,
    async revokeToken(token) {
      const res = await call(`${url}/auth/tokens`, 'DELETE', await adminToken(), undefined, {
        'x-subject-token': token,
      })
      await res.body?.cancel()
    },
    async registerEndpoint(type, name, endpointUrl) {
      const id = (await post('/services', { service: { type, name } })).service!.id
      await post('/endpoints', {
        endpoint: { service_id: id, interface: 'public', region_id: 'RegionOne', url: endpointUrl },
      })
      return id
    },
    async halt() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
    },
    async start() {
      await up()
    },
    async stop() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export interface Personas {
  /** Project ids: `main` (admin, manager, member, reader), `other` (member `other`), `service`. */
  projects: { main: string; other: string; service: string }
  /** Project names, for issueToken. */
  projectNames: { main: string; other: string; service: string }
  /** User ids by persona; every persona's user is named `<prefix>-<persona>`. */
  users: Record<Persona, string>
  /** A fresh token for `persona`, scoped to its project. */
  token(persona: Persona): Promise<string>
  /** The API's own service user (role service in project service): what [keystone_authtoken] names. */
  apiUser: { username: string; password: string; projectName: string }
}

/**
 * One project with an admin, a project manager, a member and a reader; another project with a
 * member; project `<prefix>-service` with a service user (`service` persona) and the API's own
 * user (both role service). `prefix` keeps names apart when a file makes several sets.
 */
export async function createPersonas(ks: RunningKeystone, prefix = 'p'): Promise<Personas> {
  const names = { main: `${prefix}-main`, other: `${prefix}-other`, service: `${prefix}-service` }
  const [main, other, service] = await Promise.all([
    ks.createProject(names.main),
    ks.createProject(names.other),
    ks.createProject(names.service),
  ])
  const grants: Record<Persona, [string, string[]]> = {
    admin: [main, ['admin']],
    manager: [main, ['manager', 'member', 'reader']],
    member: [main, ['member', 'reader']],
    reader: [main, ['reader']],
    service: [service, ['service']],
    other: [other, ['member', 'reader']],
  }
  // One at a time: Keystone runs on SQLite with a single writer.
  const users = {} as Record<Persona, string>
  for (const [persona, [project, roles]] of Object.entries(grants) as [
    Persona,
    [string, string[]],
  ][]) {
    users[persona] = await ks.createUser(`${prefix}-${persona}`, project, roles)
  }
  await ks.createUser(`${prefix}-cyborg`, service, ['service'])
  const projectOf = (p: Persona) =>
    p === 'service' ? names.service : p === 'other' ? names.other : names.main
  return {
    projects: { main, other, service },
    projectNames: names,
    users,
    token: (persona) => ks.issueToken(`${prefix}-${persona}`, projectOf(persona)),
    apiUser: { username: `${prefix}-cyborg`, password: USER_PASSWORD, projectName: names.service },
  }
}

/** The API's Keystone validator settings for `ks`, authenticating as the personas' API user (`cyborg`, role service). */
export function apiAuthOptions(ks: RunningKeystone, people: Personas): KeystoneAuthOptions {
  return {
    authUrl: ks.url,
    timeoutMs: 30_000,
    credentials: { ...people.apiUser, userDomainName: 'Default', projectDomainName: 'Default' },
    serviceTokenRoles: ['service'],
    serviceTokenRolesRequired: true,
    cacheTimeMs: 300_000,
  }
}
