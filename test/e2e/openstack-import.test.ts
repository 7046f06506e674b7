/**
 * Taking over an OpenStack Cyborg 9.0.0 deployment as docs/migrate-from-openstack-cyborg.md says,
 * with the real commands: `cyborg db sync`, `cyborg db import-openstack --dry-run`, the import, a
 * second import refused, then `cyborg up` on the imported SQLite database with the agent's host
 * named `vm` (its fake driver reports the imported device). Then the real clients see what they
 * saw before: `openstack accelerator arq list / device profile list` (python3-cyborgclient) and
 * Nova's `get_arqs_for_instance` (python3-nova) for every instance that has requests.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects } from '../support/db.js'
import { novaClientSkip, novaStep } from '../support/peers/nova-client.js'
import {
  DUMP_900,
  EXPECTED,
  loadOpenStackCyborg,
  paddedInfo,
  type OpenStackDatabase,
} from '../support/peers/openstack-cyborg.js'
import { runCommand, startService, type RunningService } from '../support/service.js'

const OPENSTACK = '/usr/bin/openstack'
const cliSkip = existsSync(OPENSTACK) ? undefined : `${OPENSTACK} not installed`
if (cliSkip && process.env.CYBORG_REQUIRE_SERVICES === '1') throw new Error(cliSkip)
const novaSkip = novaClientSkip()
const maria = (await testDialects()).find((d) => d.name === 'mysql')!

type Row = Record<string, unknown>

function openstack(url: string, args: string[]): Promise<Row[] | Row> {
  const auth = [
    '--os-auth-type',
    'admin_token',
    '--os-token',
    'admin',
    '--os-endpoint',
    `${url}/v2`,
  ]
  return new Promise((resolve, reject) => {
    execFile(
      OPENSTACK,
      [...auth, 'accelerator', ...args, '-f', 'json'],
      {
        env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`openstack ${args.join(' ')}: ${stderr}`))
          : resolve(JSON.parse(stdout) as Row[]),
    )
  })
}

void describe(
  'taking over OpenStack Cyborg 9.0.0 with the cyborg command',
  { skip: maria.skip },
  () => {
    let source: OpenStackDatabase
    let dir: string
    let env: Record<string, string>
    let service: RunningService | undefined
    before(async () => {
      source = await loadOpenStackCyborg([DUMP_900])
      dir = await mkdtemp(path.join(tmpdir(), 'cyborg-import-'))
      env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${path.join(dir, 'cyborg.sqlite')}` }
    })
    after(async () => {
      if (service) assert.equal(await service.stop(), 0, service.output())
      await source?.drop()
      await rm(dir, { recursive: true, force: true })
    })

    void it('db sync, a dry run, the import, and a second import refused', async () => {
      assert.equal((await runCommand(['db', 'sync'], env)).code, 0)
      const from = ['db', 'import-openstack', '--from', source.url]
      const dry = await runCommand([...from, '--dry-run'], env)
      assert.equal(dry.code, 0, dry.output)
      assert.match(
        dry.output,
        /OpenStack Cyborg schema 4cc1d79978fc: 9\.0\.0 \(Zed\) and 10\.x \(2023\.1\)/,
      )
      assert.match(dry.output, /^extended_accelerator_requests\s+9\s+9\s+0$/m)
      assert.match(dry.output, /would bring 33 row\(s\); 0 could not be mapped/)
      const json = await runCommand([...from, '--dry-run', '--format', 'json'], env)
      assert.equal(json.code, 0, json.output)
      const parsed = JSON.parse(json.output) as { counts: Record<string, { brought: number }> }
      assert.equal(parsed.counts.attach_handles?.brought, 16)

      const run = await runCommand(from, env)
      assert.equal(run.code, 0, run.output)
      assert.match(run.output, /^brought 33 row\(s\); 0 could not be mapped$/m)
      const again = await runCommand(from, env)
      assert.equal(again.code, 1)
      assert.match(
        again.output,
        /^cyborg db import-openstack: .* already holds devices, device profiles or accelerator requests: .*--merge/m,
      )
    })

    void it('cyborg up on it, host vm: the agent reports the same device, nothing is added', async () => {
      service = await startService({
        env: { ...env, CYBORG_DEFAULT__HOST: 'vm' },
        // Ready once the agent's report is in: its trait key replaces OpenStack's traits1.
        ready: async (url) => {
          const r = await fetch(`${url}/v2/deployables`)
          const body = (await r.json()) as { deployables: { attributes_list: string }[] }
          return r.ok && body.deployables.some((d) => d.attributes_list.includes('trait0'))
        },
      })
      const devices = (await (await fetch(`${service.url}/v2/devices`)).json()) as {
        devices: Row[]
      }
      assert.deepEqual(
        devices.devices.map((d) => d.uuid),
        [EXPECTED.devices[0]!.uuid],
      )
      const deployables = (await (await fetch(`${service.url}/v2/deployables`)).json()) as {
        deployables: Row[]
      }
      assert.deepEqual(
        deployables.deployables.map((d) => [d.uuid, d.rp_uuid]),
        [[EXPECTED.deployables[0]!.uuid, EXPECTED.deployables[0]!.rp_uuid]],
      )
    })

    void it(
      'openstack accelerator arq list and device profile list show every request and profile',
      { skip: cliSkip },
      async () => {
        assert.ok(service)
        const arqs = (await openstack(service.url, ['arq', 'list'])) as Row[]
        const byUuid = new Map(arqs.map((a) => [a.UUID ?? a.uuid, a]))
        assert.equal(arqs.length, EXPECTED.accelerator_requests.length)
        for (const want of EXPECTED.accelerator_requests) {
          const got = byUuid.get(want.uuid)
          assert.ok(got, `${want.uuid} listed`)
          assert.equal(got.State ?? got.state, want.state)
          assert.equal(
            got['Device Profile Name'] ?? got.device_profile_name,
            want.device_profile_name,
          )
          assert.equal(got['Instance UUID'] ?? got.instance_uuid, want.instance_uuid)
        }
        const bound = EXPECTED.accelerator_requests.find((a) => a.state === 'Bound')!
        const shown = (await openstack(service.url, ['arq', 'show', bound.uuid])) as Row
        assert.equal(shown.device_rp_uuid, bound.device_rp_uuid)
        assert.equal(shown.hostname, bound.hostname)
        assert.equal(shown.attach_handle_type, 'TEST_PCI')
        const profiles = (await openstack(service.url, ['device', 'profile', 'list'])) as Row[]
        assert.deepEqual(
          profiles.map((p) => [p.UUID ?? p.uuid, p.Name ?? p.name]).sort(),
          EXPECTED.device_profiles.map((p) => [p.uuid, p.name]).sort(),
        )
      },
    )

    void it(
      'Nova’s cyborg client resolves every instance’s requests, as before the switch',
      { skip: novaSkip },
      async () => {
        assert.ok(service)
        for (const { instance_uuid, arqs } of EXPECTED.instances) {
          const r = await novaStep(service.url, ['get', instance_uuid, 'resolved'])
          assert.equal(r.code, 0, r.stderr)
          const got = r.out as Row[]
          assert.deepEqual(got.map((a) => a.uuid).sort(), [...arqs].sort())
          for (const a of got) {
            const want = EXPECTED.accelerator_requests.find((e) => e.uuid === a.uuid)!
            assert.equal(a.state, want.state)
            assert.equal(a.device_rp_uuid, want.device_rp_uuid)
            assert.equal(a.hostname, want.hostname)
            assert.equal(a.attach_handle_type, want.attach_handle_type)
            assert.deepEqual(
              a.attach_handle_info,
              want.state === 'Bound' ? paddedInfo(want.attach_handle_info) : {},
            )
          }
        }
        const first = EXPECTED.instances[0]!
        const one = await novaStep(service.url, ['get-one', first.arqs[0]!])
        assert.equal(one.code, 0, one.stderr)
        assert.equal((one.out as Row).instance_uuid, first.instance_uuid)
      },
    )
  },
)
