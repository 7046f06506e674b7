/**
 * The real `openstack accelerator deployable program` (Debian python3-cyborgclient) against
 * `cyborg up` with a real Glance and a real Placement, discovery period an hour: the command
 * succeeds, and Placement holds the new function trait as soon as it has. A program while a
 * unit is bound fails with the holder named; a member gets a 403.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { startService, type RunningService } from '../support/service.js'
import { glanceSkip, startGlance, type RunningGlance } from '../support/peers/glance.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const OPENSTACK = '/usr/bin/openstack'
if (!existsSync(OPENSTACK) && process.env.CYBORG_REQUIRE_SERVICES === '1')
  throw new Error(`${OPENSTACK} is missing (install python3-openstackclient python3-cyborgclient)`)
const skip =
  (await glanceSkip()) ??
  (await placementSkip()) ??
  (existsSync(OPENSTACK) ? undefined : `${OPENSTACK} not installed`)
const HOST = 'prog-cli.example'

function openstack(url: string, args: string[]): Promise<{ code: number; out: string }> {
  const auth = [
    '--os-auth-type',
    'admin_token',
    '--os-token',
    'admin',
    '--os-endpoint',
    `${url}/v2`,
  ]
  return new Promise((resolve) => {
    execFile(
      OPENSTACK,
      [...auth, 'accelerator', ...args],
      {
        env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          out: stdout + stderr,
        }),
    )
  })
}

void describe(
  'openstack accelerator deployable program, against real Glance and Placement',
  { skip },
  () => {
    let glance: RunningGlance
    let placement: RunningPlacement
    let service: RunningService
    let deployable: { uuid: string; rp_uuid: string }

    before(async () => {
      ;[glance, placement] = await Promise.all([startGlance(), startPlacement()])
      service = await startService({
        env: {
          CYBORG_DEFAULT__HOST: HOST,
          CYBORG_DEFAULT__PERIODIC_INTERVAL: '3600',
          CYBORG_AGENT__AUTO_ACTIVATE: 'true',
          CYBORG_GLANCE__ENDPOINT_OVERRIDE: glance.url,
          CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: placement.url,
          CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
          CYBORG_PLACEMENT__TOKEN: 'admin',
          CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/deployables`)
          const body = (await r.json()) as { deployables: { rp_uuid?: string | null }[] }
          return r.ok && body.deployables.length > 0
        },
      })
      const r = await fetch(`${service.url}/v2/deployables`)
      deployable = ((await r.json()) as { deployables: (typeof deployable)[] }).deployables[0]!
    })
    after(async () => {
      if (service) assert.equal(await service.stop(), 0, service.output())
      await Promise.all([glance?.stop(), placement?.stop()])
    })

    const functionTraits = async () => {
      const rp = await placement.client.findProviderByName(
        `${HOST.replace(/[^A-Za-z0-9]/g, '_')}_FakeDevice`,
      )
      assert.ok(rp, 'the deployable has its provider')
      return (await placement.client.getTraits(rp.uuid)).filter((t) =>
        t.startsWith('CUSTOM_FPGA_FUNCTION_ID_'),
      )
    }

    void it('programs the image and Placement has the new trait when the command returns', async () => {
      const image = await glance.upload(Buffer.from('function_id=sha3\nbitstream: sha3 v2\n'))
      assert.deepEqual(await functionTraits(), [])
      const r = await openstack(service.url, ['deployable', 'program', deployable.uuid, image])
      assert.equal(r.code, 0, r.out)
      assert.deepEqual(await functionTraits(), ['CUSTOM_FPGA_FUNCTION_ID_FAKE_SHA3'])
      const shown = (await (
        await fetch(`${service.url}/v2/deployables/${deployable.uuid}`)
      ).json()) as {
        uuid: string
      }
      assert.equal(shown.uuid, deployable.uuid)
    })

    void it('fails, naming the request, while a unit is bound', async () => {
      const admin = { 'x-auth-token': 'admin', 'content-type': 'application/json' }
      const dp = await fetch(`${service.url}/v2/device_profiles`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify([{ name: 'fpga1', groups: [{ 'resources:FPGA': '1' }] }]),
      })
      assert.equal(dp.status, 201, await dp.text())
      const created = await fetch(`${service.url}/v2/accelerator_requests`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ device_profile_name: 'fpga1' }),
      })
      const arq = ((await created.json()) as { arqs: { uuid: string }[] }).arqs[0]!
      const bind = await fetch(`${service.url}/v2/accelerator_requests/${arq.uuid}`, {
        method: 'PATCH',
        headers: admin,
        body: JSON.stringify({
          [arq.uuid]: [
            { op: 'add', path: '/hostname', value: HOST },
            { op: 'add', path: '/instance_uuid', value: '0f9c0000-0000-4000-8000-000000000001' },
          ],
        }),
      })
      assert.ok(bind.ok, await bind.text())
      const image = await glance.upload(Buffer.from('function_id=md5\n'))
      const r = await openstack(service.url, ['deployable', 'program', deployable.uuid, image])
      assert.notEqual(r.code, 0)
      assert.match(r.out, new RegExp(`accelerator request ${arq.uuid}`))
      assert.deepEqual(await functionTraits(), ['CUSTOM_FPGA_FUNCTION_ID_FAKE_SHA3'], 'unchanged')
    })
  },
)
