/**
 * The real v1 clients of Debian's python3-cyborgclient 2.0.0 against `cyborg up`:
 * - its v1 python API (`cyborgclient.v1.client.Client`), which lists and shows our accelerators;
 * - `openstack accelerator list --os-accelerator-api-version 1`, which this client version breaks
 *   itself: its plugin hands the v1 command an openstacksdk proxy, which has no `accelerators`, so
 *   it fails before sending any request. The test accepts that failure only in that exact form,
 *   and checks the accelerators appear should a fixed client list them.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ROOT, startService, type RunningService } from '../support/service.js'

const PYTHON = '/usr/bin/python3'
const OPENSTACK = '/usr/bin/openstack'
const present = existsSync(OPENSTACK)
if (!present && process.env.CYBORG_REQUIRE_SERVICES === '1') {
  throw new Error(`${OPENSTACK} is missing (install python3-openstackclient python3-cyborgclient)`)
}
const HOST = 'v1-host.example'

function run(
  file: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
      },
    )
  })
}

describe(
  'the real v1 clients against cyborg up',
  { skip: !present && `${OPENSTACK} not installed` },
  () => {
    let service: RunningService
    let accelerators: {
      uuid: string
      name: string
      type: string
      device_type: string
      capability: string
    }[]
    before(async () => {
      service = await startService({
        env: { CYBORG_DEFAULT__HOST: HOST, CYBORG_AGENT__AUTO_ACTIVATE: 'true' },
        ready: async (url) => {
          const r = await fetch(`${url}/v1/accelerators`)
          return r.ok && ((await r.json()) as { accelerators: unknown[] }).accelerators.length > 0
        },
      })
      accelerators = (
        (await (await fetch(`${service.url}/v1/accelerators`)).json()) as {
          accelerators: typeof accelerators
        }
      ).accelerators
    })
    after(async () => {
      assert.equal(await service.stop(), 0, service.output())
    })

    test('cyborgclient.v1 lists and shows our accelerators with the columns the CLI prints', async () => {
      const r = await run(PYTHON, [path.join(ROOT, 'test/e2e/v1-client.py'), service.url])
      assert.equal(r.code, 0, r.stderr)
      const out = JSON.parse(r.stdout) as {
        list: Record<string, string>[]
        show: Record<string, string>
        missing: { class: string; message: string } | null
      }
      assert.equal(out.list.length, 1)
      const [fake] = accelerators
      assert.deepEqual(out.list[0], {
        uuid: fake!.uuid,
        name: fake!.name,
        type: 'FPGA',
        description: out.list[0]!.description,
        device_type: 'FPGA',
        capability: 'CUSTOM_FAKE_DEVICE',
      })
      assert.match(
        out.list[0]!.description!,
        new RegExp(`^FPGA .* on ${HOST.replace(/\./g, '\\.')}$`),
      )
      assert.deepEqual(out.show, { ...out.list[0], hostname: HOST, lifecycle: 'active' })
      // Its HTTP client json.loads error_message: it gets the JSON text (an object is a TypeError).
      assert.equal(out.missing?.class, 'NotFound', JSON.stringify(out.missing))
      assert.match(out.missing.message, /00000000-0000-4000-8000-000000000000 not found/)
    })

    test("openstack accelerator list at v1: the accelerators, or the client's own known failure", async () => {
      const auth = [
        '--os-auth-type',
        'admin_token',
        '--os-token',
        'admin',
        '--os-endpoint',
        `${service.url}/v1`,
      ]
      const r = await run(OPENSTACK, [
        ...auth,
        '--os-accelerator-api-version',
        '1',
        'accelerator',
        'list',
        '-f',
        'json',
      ])
      if (r.code !== 0) {
        assert.match(
          r.stderr,
          /'Proxy' object has no attribute 'accelerators'/,
          `an unexpected failure: ${r.stderr}`,
        )
        return
      }
      const rows = JSON.parse(r.stdout) as Record<string, string>[]
      assert.deepEqual(
        rows.map((row) => row.UUID),
        accelerators.map((a) => a.uuid),
      )
    })
  },
)
