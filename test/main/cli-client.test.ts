/**
 * The client subcommands of the built `cyborg` command (bin/cyborg) against a running embedded
 * server: tables for people, JSON for scripts, one line on stderr and exit code 1 on a failure.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { freePort, startService, type RunningService } from '../support/service.js'
import { cyborg } from '../support/cli.js'

describe('cyborg client commands against cyborg up', () => {
  let service: RunningService
  let env: Record<string, string>
  before(async () => {
    service = await startService({
      env: { CYBORG_DEFAULT__HOST: 'cli-host' },
      ready: async (url) => {
        const r = await fetch(`${url}/v2/devices`)
        return r.ok && ((await r.json()) as { devices: unknown[] }).devices.length > 0
      },
    })
    env = { CYBORG_URL: service.url }
  })
  after(async () => {
    assert.equal(await service.stop(), 0, service.output())
  })

  it('lists and shows accelerators as a table and as JSON', async () => {
    const table = await cyborg(['accelerator', 'list'], env)
    assert.equal(table.code, 0, table.stderr)
    const lines = table.stdout.trimEnd().split('\n')
    assert.match(
      lines[0]!,
      /^UUID +Name +Type +Device Type +Capability +Host +Lifecycle +Attached To$/,
    )
    assert.match(lines[1]!, /^-+ +-+/)
    assert.match(
      lines[2]!,
      /cli_host_FakeDevice +FPGA +FPGA +CUSTOM_FAKE_DEVICE +cli-host +inactive +\[\]$/,
    )
    const listed = await cyborg(
      ['accelerator', 'list', '--format', 'json', '--host', 'cli-host'],
      env,
    )
    const [acc] = JSON.parse(listed.stdout) as { uuid: string; name: string }[]
    assert.equal(acc!.name, 'cli_host_FakeDevice')
    assert.deepEqual(
      JSON.parse(
        (await cyborg(['accelerator', 'list', '--format', 'json', '--host', 'elsewhere'], env))
          .stdout,
      ),
      [],
    )
    const shown = await cyborg([
      'accelerator',
      'show',
      acc!.uuid,
      '--format',
      'json',
      '--url',
      service.url,
    ])
    assert.equal(shown.code, 0, shown.stderr)
    assert.equal((JSON.parse(shown.stdout) as { uuid: string }).uuid, acc!.uuid)
    const record = await cyborg(['accelerator', 'show', acc!.uuid], env)
    assert.match(record.stdout, /^Field +Value\n/)
    assert.match(record.stdout, /\nhostname +cli-host\n/)
  })

  it('marks a device ready: it becomes active; again is a one-line 409 and exit code 1', async () => {
    const [device] = JSON.parse(
      (await cyborg(['device', 'list', '--format', 'json'], env)).stdout,
    ) as { uuid: string; lifecycle: string }[]
    assert.equal(device!.lifecycle, 'inactive')
    const ready = await cyborg(['device', 'ready', device!.uuid, '--format', 'json'], env)
    assert.equal(ready.code, 0, ready.stderr)
    assert.equal((JSON.parse(ready.stdout) as { lifecycle: string }).lifecycle, 'active')
    const again = await cyborg(['device', 'ready', device!.uuid], env)
    assert.equal(again.code, 1)
    assert.equal(again.stdout, '')
    assert.match(
      again.stderr,
      /^cyborg device ready: POST \/v2\/devices\/\S+\/ready: HTTP 409: device \S+ is active; .*\n$/,
    )
    const shown = JSON.parse(
      (await cyborg(['device', 'show', device!.uuid, '--format', 'json'], env)).stdout,
    ) as { lifecycle: string }
    assert.equal(shown.lifecycle, 'active')
  })

  it('fails with one line that says what to do', async () => {
    const missing = await cyborg(
      ['accelerator', 'show', '00000000-0000-4000-8000-000000000000'],
      env,
    )
    assert.equal(missing.code, 1)
    assert.match(
      missing.stderr,
      /^cyborg accelerator show: GET \S+: HTTP 404: accelerator \S+ not found\n$/,
    )
    const bad = await cyborg(['accelerator', 'list', '--limit', 'x'], env)
    assert.equal(bad.code, 1)
    // Checked before any request (issue 27; test/main/cli-errors.test.ts).
    assert.match(bad.stderr, /^cyborg: error: option '--limit <n>' argument 'x' is invalid\. /)
    const down = await cyborg(['accelerator', 'list'], {
      CYBORG_URL: `http://127.0.0.1:${await freePort()}`,
    })
    assert.equal(down.code, 1)
    assert.match(
      down.stderr,
      /^cyborg accelerator list: cannot reach the Cyborg API at \S+ \(ECONNREFUSED\); is it running\? Set --url or CYBORG_URL\n$/,
    )
    const help = await cyborg(['device', 'ready', '--help'])
    assert.equal(help.code, 0)
    for (const flag of ['--url', '--token', '--format', 'CYBORG_URL', 'OS_TOKEN'])
      assert.ok(help.stdout.includes(flag), flag)
  })
})
