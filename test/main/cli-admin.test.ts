/**
 * The administration commands of the built `cyborg` command (bin/cyborg) against a running
 * `cyborg up` (fake driver, auto-activated so that it can be bound): status, driver-list,
 * service-list, discover-services, update-driver, uninstall-driver (refused while bound) and
 * install-driver, as tables and as JSON, with one line on stderr and exit code 1 on a failure.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startService, type RunningService } from '../support/service.js'
import { cyborg } from '../support/cli.js'

const INSTANCE = '0b9c0d1e-0000-4000-8000-00000000c1a0'
type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

describe('cyborg administration commands against cyborg up', () => {
  let service: RunningService
  let env: Record<string, string>
  const json = async (args: string[]) => {
    const r = await cyborg([...args, '--format', 'json'], env)
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout) as Json
  }

  before(async () => {
    service = await startService({
      env: { CYBORG_DEFAULT__HOST: 'adm-host', CYBORG_AGENT__AUTO_ACTIVATE: 'true' },
      ready: async (url) => {
        const r = await fetch(`${url}/v1/status`)
        return r.ok && ((await r.json()) as { services: unknown[] }).services.length === 3
      },
    })
    env = { CYBORG_URL: service.url }
  })
  after(async () => {
    assert.equal(await service.stop(), 0, service.output())
  })

  it('status: the api, the conductor and the agent, each up', async () => {
    const table = await cyborg(['status'], env)
    assert.equal(table.code, 0, table.stderr)
    const lines = table.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^Host +Binary +Version +State +Last Seen +Age \(s\)$/)
    assert.deepEqual(
      lines.slice(2).map((l) => l.split(/ +/).slice(0, 2).concat(l.split(/ +/)[3]!)),
      [
        ['adm-host', 'cyborg-agent', 'up'],
        ['adm-host', 'cyborg-api', 'up'],
        ['adm-host', 'cyborg-conductor', 'up'],
      ],
    )
    const body = await json(['status'])
    assert.deepEqual(
      body.services.map((s: Json) => s.state),
      ['up', 'up', 'up'],
    )
    assert.equal(body.down_after_seconds, 60)
  })

  it('host list: the agent up, its one device ok', async () => {
    const table = await cyborg(['host', 'list'], env)
    assert.equal(table.code, 0, table.stderr)
    const lines = table.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^Host +Agent +Devices +Ok +Degraded +Failed +Unknown$/)
    assert.deepEqual(lines[2]!.split(/ +/), ['adm-host', 'up', '1', '1', '0', '0', '0'])
    const body = await json(['host', 'list'])
    assert.deepEqual(body.hosts, [
      { hostname: 'adm-host', agent: 'up', devices: 1, ok: 1, degraded: 0, failed: 0, unknown: 0 },
    ])
  })

  it('driver-list and service-list show the fake driver and what its device offers', async () => {
    const table = await cyborg(['driver-list'], env)
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /^Host +Driver +Version +Status +Devices +Last Discovery\n/)
    assert.match(table.stdout, /\nadm-host +fake +\S+ +installed +1 +ok at \S+\n$/)
    const listed = await json(['driver-list', '--host', 'adm-host'])
    assert.deepEqual(
      listed.drivers.map((d: Json) => [d.name, d.aliases, d.status, d.devices]),
      [['fake', ['fake_driver'], 'installed', 1]],
    )

    const services = await cyborg(['service-list'], env)
    assert.equal(services.code, 0, services.stderr)
    assert.match(
      services.stdout,
      /^Host +Backend +Type +Address +Deployable +Service +Description +Units\n/,
    )
    assert.match(
      services.stdout,
      /\nadm-host +\S+ +FPGA +0000:0c:00\.0 +adm_host_FakeDevice +fpga +fake FPGA \(test driver\), no function loaded +16\n$/,
    )
    const [row] = (await json(['service-list'])) as unknown as Json[]
    const one = (await json(['service-list', '--backend', row!.backend])) as unknown as Json[]
    assert.deepEqual(
      one.map((r) => r.deployable),
      ['adm_host_FakeDevice'],
    )
    assert.deepEqual(await json(['service-list', '--host', 'elsewhere']), [])
  })

  it('discover-services: nothing changed on an unchanged host', async () => {
    const table = await cyborg(['discover-services'], env)
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /\nadm-host +ok +none\n$/)
    const body = await json(['discover-services', '--host', 'adm-host'])
    assert.deepEqual(
      body.hosts.map((h: Json) => [h.hostname, h.status, h.added, h.changed, h.removed]),
      [['adm-host', 'ok', [], [], []]],
    )
  })

  it('update-driver sets options and rediscovers; a malformed --set fails before any request', async () => {
    const body = await json(['update-driver', 'fake', '--set', 'note=a=b', '--set', 'other=1'])
    assert.deepEqual(
      body.hosts.map((h: Json) => [h.hostname, h.status, h.options]),
      [['adm-host', 'ok', { note: 'a=b', other: '1' }]],
    )
    const table = await cyborg(
      ['update-driver', 'fake', '--host', 'adm-host', '--set', 'note=c'],
      env,
    )
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /^Host +Status +Enabled +Changes +Error\n.*\nadm-host +ok +true/)
    const bad = await cyborg(['update-driver', 'fake', '--set', 'novalue'], env)
    assert.deepEqual([bad.code, bad.stdout], [1, ''])
    assert.match(bad.stderr, /^cyborg update-driver: --set expects key=value, got "novalue".*\n$/)
  })

  it('uninstall-driver is refused while the device is bound (one line, exit 1), then uninstalls and reinstalls', async () => {
    const profile = await cyborg(
      ['device-profile', 'create', 'adm-fpga', '[{"resources:FPGA": "1"}]'],
      env,
    )
    assert.equal(profile.code, 0, profile.stderr)
    const [arq] = (await json(['arq', 'create', 'adm-fpga'])) as unknown as Json[]
    const bound = await cyborg(
      ['arq', 'bind', arq!.uuid, '--host', 'adm-host', '--instance', INSTANCE],
      env,
    )
    assert.equal(bound.code, 0, bound.stderr)

    const refused = await cyborg(['uninstall-driver', 'fake'], env)
    assert.deepEqual([refused.code, refused.stdout], [1, ''])
    assert.match(
      refused.stderr,
      new RegExp(
        `^cyborg uninstall-driver: POST /v1/drivers/fake/uninstall: HTTP 409: driver fake has ` +
          `allocated devices: adm_host_FakeDevice on adm-host \\(held by accelerator request ` +
          `${arq!.uuid as string} Bound for instance ${INSTANCE}\\); detach or unbind them ` +
          `first\\n$`,
      ),
    )
    assert.equal((await cyborg(['arq', 'delete', arq!.uuid], env)).code, 0)

    const done = await json(['uninstall-driver', 'fake', '--host', 'adm-host'])
    assert.deepEqual(
      done.hosts.map((h: Json) => [h.status, h.enabled]),
      [['ok', false]],
    )
    assert.match(
      (await cyborg(['driver-list'], env)).stdout,
      /\nadm-host +fake +\S+ +disabled +0 +never\n$/,
    )
    const installed = await cyborg(['install-driver', 'fake_driver'], env)
    assert.equal(installed.code, 0, installed.stderr)
    assert.match(installed.stdout, /\nadm-host +ok +true +added 1, updated 0, removed 0\n$/)
    assert.equal(installed.stderr, '', 'no progress lines when stderr is not a terminal')
  })

  it('fails with one line naming what is wrong; every command documents its flags', async () => {
    const unknown = await cyborg(['install-driver', 'nope'], env)
    assert.deepEqual([unknown.code, unknown.stdout], [1, ''])
    assert.match(
      unknown.stderr,
      /^cyborg install-driver: POST \/v1\/drivers\/nope\/install: HTTP 404: driver nope is not configured on any agent that answered\n$/,
    )
    const named = await cyborg(['uninstall-driver', 'nope', '--host', 'adm-host'], env)
    assert.match(
      named.stderr,
      /^cyborg uninstall-driver: POST \S+: HTTP 404: driver nope is not configured on this agent; known drivers: fake\n$/,
    )
    const host = await cyborg(['discover-services', '--host', 'nowhere'], env)
    assert.equal(host.code, 1)
    assert.match(
      host.stderr,
      /^cyborg discover-services: POST \/v1\/discovery: HTTP 404: host nowhere is not a known agent; known agents: adm-host\n$/,
    )
    const backend = await cyborg(['service-list', '--backend', 'x'], env)
    assert.equal(backend.code, 1)
    assert.match(backend.stderr, /HTTP 400: Invalid input for field 'backend'/)
    for (const command of [
      'driver-list',
      'install-driver',
      'uninstall-driver',
      'update-driver',
      'discover-services',
      'service-list',
      'status',
    ]) {
      const help = await cyborg([command, '--help'])
      assert.equal(help.code, 0)
      for (const flag of ['--url', '--token', '--format', 'CYBORG_URL', 'OS_TOKEN'])
        assert.ok(help.stdout.includes(flag), `${command} ${flag}`)
      if (command !== 'status') assert.ok(help.stdout.includes('--host'), `${command} --host`)
    }
  })
})
