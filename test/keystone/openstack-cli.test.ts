/**
 * The real `openstack accelerator` CLI (Debian python3-openstackclient + python3-cyborgclient)
 * against `cyborg up` with `[api] auth_strategy = keystone`, as an operator would run it: password
 * auth of a Keystone user (OS_AUTH_URL, OS_USERNAME, …), no --os-endpoint and no admin_token. The
 * CLI gets a real fernet token, finds the `accelerator` endpoint in Keystone's catalog, and the
 * API validates that token against the same Keystone and applies the policy.
 *
 * Skipped when keystone or the CLI is missing, unless CYBORG_REQUIRE_SERVICES=1.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startService, type RunningService } from '../support/service.js'
import {
  createPersonas,
  keystoneSkip,
  startKeystone,
  USER_PASSWORD,
  type Persona,
  type Personas,
  type RunningKeystone,
} from '../support/peers/keystone.js'

const OPENSTACK = '/usr/bin/openstack'
if (!existsSync(OPENSTACK) && process.env.CYBORG_REQUIRE_SERVICES === '1') {
  throw new Error(`${OPENSTACK} is missing (install python3-openstackclient python3-cyborgclient)`)
}
const skip =
  (await keystoneSkip()) ?? (existsSync(OPENSTACK) ? undefined : `${OPENSTACK} not installed`)
const HOST = 'ks-cli-host.example'
const PREFIX = 'cli'
const GROUPS = '[{"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}]'

interface Result {
  code: number
  stdout: string
  stderr: string
}
type Row = Record<string, unknown>

void describe(
  'openstack accelerator CLI with a Keystone token from the catalog',
  { skip, timeout: 300_000 },
  () => {
    let ks: RunningKeystone
    let people: Personas
    let service: RunningService
    let home: string

    /** `openstack accelerator ARGS` as `persona`, authenticated with its password only. */
    const openstack = (persona: Persona, args: string[]): Promise<Result> => {
      const project =
        persona === 'other'
          ? people.projectNames.other
          : persona === 'service'
            ? people.projectNames.service
            : people.projectNames.main
      const env = {
        PATH: '/usr/bin:/bin',
        HOME: home,
        LANG: 'C.UTF-8',
        OS_AUTH_TYPE: 'password',
        OS_AUTH_URL: ks.url,
        OS_IDENTITY_API_VERSION: '3',
        OS_USERNAME: `${PREFIX}-${persona}`,
        OS_PASSWORD: USER_PASSWORD,
        OS_PROJECT_NAME: project,
        OS_USER_DOMAIN_ID: 'default',
        OS_PROJECT_DOMAIN_ID: 'default',
        OS_REGION_NAME: 'RegionOne',
        OS_INTERFACE: 'public',
      }
      return new Promise((resolve) => {
        execFile(
          OPENSTACK,
          ['accelerator', ...args],
          { env, timeout: 90_000 },
          (err, stdout, stderr) => {
            resolve({
              code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
              stdout,
              stderr,
            })
          },
        )
      })
    }
    const json = async <T>(persona: Persona, args: string[]): Promise<T> => {
      const r = await openstack(persona, [...args, '-f', 'json'])
      assert.equal(
        r.code,
        0,
        `openstack accelerator ${args.join(' ')} as ${persona} failed: ${r.stderr}`,
      )
      return JSON.parse(r.stdout) as T
    }
    const uuidOf = (row: Row) => String(row.UUID ?? row.uuid)

    before(async () => {
      home = await mkdtemp(path.join(tmpdir(), 'cyborg-cli-home-'))
      ks = await startKeystone()
      people = await createPersonas(ks, PREFIX)
      const admin = await people.token('admin')
      service = await startService({
        env: {
          CYBORG_DEFAULT__HOST: HOST,
          CYBORG_AGENT__AUTO_ACTIVATE: 'true',
          CYBORG_API__AUTH_STRATEGY: 'keystone',
          CYBORG_KEYSTONE_AUTHTOKEN__AUTH_URL: ks.url,
          CYBORG_KEYSTONE_AUTHTOKEN__USERNAME: people.apiUser.username,
          CYBORG_KEYSTONE_AUTHTOKEN__PASSWORD: people.apiUser.password,
          CYBORG_KEYSTONE_AUTHTOKEN__PROJECT_NAME: people.apiUser.projectName,
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/devices`, { headers: { 'x-auth-token': admin } })
          return r.ok && ((await r.json()) as { devices: unknown[] }).devices.length > 0
        },
      })
      // What `openstack service create` and `openstack endpoint create` would register.
      await ks.registerEndpoint('accelerator', 'cyborg', `${service.url}/v2`)
    })
    after(async () => {
      if (service) assert.equal(await service.stop(), 0, service.output())
      await ks?.stop()
      if (home) await rm(home, { recursive: true, force: true })
    })

    void it('lists the devices as the admin (the endpoint comes from the catalog)', async () => {
      const table = await openstack('admin', ['device', 'list'])
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, new RegExp(HOST.replace(/\./g, '\\.')))
      const devices = await json<Row[]>('admin', ['device', 'list'])
      assert.equal(devices.length, 1)
      assert.equal(devices[0]!.Hostname ?? devices[0]!.hostname, HOST)
      assert.equal(devices[0]!.Type ?? devices[0]!.type, 'FPGA')
    })

    void it('lets the admin create a device profile and a reader list it', async () => {
      const created = await json<Row>('admin', ['device', 'profile', 'create', 'cli-dp', GROUPS])
      assert.equal(created.name, 'cli-dp')
      const listed = await json<Row[]>('reader', ['device', 'profile', 'list'])
      assert.deepEqual(
        listed.map((p) => p.Name ?? p.name),
        ['cli-dp'],
      )
      const refused = await openstack('reader', [
        'device',
        'profile',
        'create',
        'reader-dp',
        GROUPS,
      ])
      assert.notEqual(refused.code, 0)
      assert.match(refused.stderr, /cyborg:device_profile:create/)
    })

    void it('refuses a plain member the device list with the 403 naming the rule', async () => {
      const r = await openstack('member', ['device', 'list'])
      assert.notEqual(r.code, 0)
      assert.match(r.stderr, /Policy doesn't allow cyborg:device:get_all to be performed/)
      assert.doesNotMatch(r.stdout, new RegExp(HOST.replace(/\./g, '\\.')))
    })

    void it('shows a member its own accelerator request, and another project’s member nothing of it', async () => {
      const created = await json<Row>('member', ['arq', 'create', 'cli-dp'])
      const uuid = uuidOf(created)
      assert.match(uuid, /^[0-9a-f-]{36}$/)
      assert.equal(created.device_profile_name, 'cli-dp')

      const mine = await json<Row[]>('member', ['arq', 'list'])
      assert.deepEqual(mine.map(uuidOf), [uuid])
      const reader = await json<Row[]>('reader', ['arq', 'list'])
      assert.deepEqual(reader.map(uuidOf), [uuid], 'a reader of the same project sees it')

      const theirs = await json<Row[]>('other', ['arq', 'list'])
      assert.deepEqual(theirs, [])
      const shown = await openstack('other', ['arq', 'show', uuid])
      assert.notEqual(shown.code, 0)
      assert.match(shown.stderr, /not found/i)
      const deleted = await openstack('other', ['arq', 'delete', uuid])
      assert.notEqual(deleted.code, 0)
      assert.deepEqual(
        (await json<Row[]>('member', ['arq', 'list'])).map(uuidOf),
        [uuid],
        'still there after the other project’s delete',
      )
    })
  },
)
