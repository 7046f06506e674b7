/**
 * Real Nova's Cyborg client (Debian python3-nova, `nova.accelerator.cyborg`, driven by
 * test/e2e/nova-client.py under /usr/bin/python3) against `cyborg up`: what nova-api does at boot
 * with a flavor that names a device profile. The ARQ steps come with the ARQ API (issue 4).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ROOT, startService, type RunningService } from '../support/service.js'

const NOVA = '/usr/lib/python3/dist-packages/nova/accelerator/cyborg.py'
const present = existsSync(NOVA)
if (!present && process.env.CYBORG_REQUIRE_SERVICES === '1') throw new Error(`${NOVA} is missing (install python3-nova)`)

/** Runs one step of the script; resolves with its exit code and parsed JSON output. */
function nova(service: RunningService, args: string[]): Promise<{ code: number; out: unknown; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      '/usr/bin/python3',
      [path.join(ROOT, 'test/e2e/nova-client.py'), `${service.url}/v2`, ...args],
      { env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0
        let out: unknown
        try {
          out = JSON.parse(stdout)
        } catch {
          out = stdout
        }
        resolve({ code, out, stderr })
      },
    )
  })
}

void describe('real Nova cyborg client against cyborg up', { skip: !present && 'python3-nova not installed' }, () => {
  let service: RunningService
  before(async () => {
    service = await startService({ env: { CYBORG_DEFAULT__HOST: 'nova-e2e.example' } })
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { name: 'dp-nova', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required', 'accel:function_id': 'gzip' }, { 'resources:PGPU': '2', 'trait:CUSTOM_OLD': 'forbidden' }] },
      ]),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(async () => {
    assert.equal(await service?.stop(), 0, service?.output())
  })

  void it('turns the device profile into Placement request groups, as nova-api does at boot', async () => {
    const r = await nova(service, ['groups', 'dp-nova'])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(r.out, [
      { requester_id: 'device_profile_0', resources: { FPGA: 1 }, required_traits: ['CUSTOM_FAKE_DEVICE'], forbidden_traits: [] },
      { requester_id: 'device_profile_1', resources: { PGPU: 2 }, required_traits: [], forbidden_traits: ['CUSTOM_OLD'] },
    ])
  })

  void it('fails the boot with Nova’s own error for an unknown profile', async () => {
    const r = await nova(service, ['groups', 'no-such-profile'])
    assert.equal(r.code, 3, r.stderr)
    assert.deepEqual(r.out, {
      error: 'DeviceProfileError',
      message: 'Device profile name no-such-profile: Expected 1 device profile but got nothing.',
    })
  })
})
