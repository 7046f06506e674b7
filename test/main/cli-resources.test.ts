/**
 * `cyborg deployable|device-profile|arq …` (the built bin/cyborg) against a running `cyborg up`
 * whose fake device is auto-activated, so that requests can be bound: tables and JSON, the whole
 * ARQ flow, and one-line failures with exit code 1.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startService, type RunningService } from '../support/service.js'
import { cyborg, cyborgFails, cyborgJson } from '../support/cli.js'

const GROUPS = '[{"resources:FPGA": 1, "trait:CUSTOM_FAKE_DEVICE": "required"}]'

type Json = Record<string, unknown>

describe('cyborg v2 resource commands against cyborg up', () => {
  let service: RunningService
  let env: Record<string, string>
  const json = <T = Json>(args: string[]) => cyborgJson<T>(args, env)
  const fails = (args: string[], pattern: RegExp) => cyborgFails(args, env, pattern)

  before(async () => {
    service = await startService({
      env: { CYBORG_DEFAULT__HOST: 'res-host', CYBORG_AGENT__AUTO_ACTIVATE: 'true' },
      ready: async (url) => {
        const r = await fetch(`${url}/v2/deployables`)
        return r.ok && ((await r.json()) as { deployables: unknown[] }).deployables.length > 0
      },
    })
    env = { CYBORG_URL: service.url }
  })
  after(async () => {
    assert.equal(await service.stop(), 0, service.output())
  })

  it('lists and shows deployables as a table and as JSON', async () => {
    const table = await cyborg(['deployable', 'list'], env)
    assert.equal(table.code, 0, table.stderr)
    const lines = table.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^UUID +Name +Device Id +Accelerators +Provider \(rp_uuid\) +Driver$/)
    assert.match(lines[2]!, /res_host_FakeDevice +\d+ +\d+ +[0-9a-f-]{36} +fake$/)
    const [dep] = await json<Json[]>(['deployable', 'list'])
    assert.equal(dep!.name, 'res_host_FakeDevice')
    const shown = await json(['deployable', 'show', String(dep!.uuid)])
    assert.equal(shown.rp_uuid, dep!.rp_uuid)
    const record = await cyborg(['deployable', 'show', String(dep!.uuid)], env)
    assert.match(record.stdout, /^Field +Value\n/)
    assert.match(record.stdout, /\nname +res_host_FakeDevice\n/)
    await fails(
      ['deployable', 'show', randomUUID()],
      /^cyborg deployable show: GET \/v2\/deployables\/\S+: HTTP 404: deployable \S+ not found\n$/,
    )
  })

  it('creates, lists, shows and deletes device profiles', async () => {
    const created = await json([
      'device-profile',
      'create',
      'cli-fpga',
      GROUPS,
      '--description',
      'one fake FPGA',
    ])
    assert.equal(created.name, 'cli-fpga')
    assert.equal(created.description, 'one fake FPGA')
    assert.deepEqual(created.groups, [
      { 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' },
    ])
    const table = await cyborg(['device-profile', 'create', 'cli-other', GROUPS], env)
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /\nname +cli-other\n/)
    const listed = await json<Json[]>(['device-profile', 'list'])
    assert.deepEqual(listed.map((p) => p.name).sort(), ['cli-fpga', 'cli-other'])
    const listTable = await cyborg(['device-profile', 'list'], env)
    assert.match(listTable.stdout, /^UUID +Name +Description +Groups\n/)
    assert.match(
      listTable.stdout,
      /cli-fpga +one fake FPGA +\[\{"resources:FPGA":"1","trait:CUSTOM_FAKE_DEVICE":"required"\}\]\n/,
    )
    assert.equal((await json(['device-profile', 'show', 'cli-fpga'])).uuid, created.uuid)
    assert.equal((await json(['device-profile', 'show', String(created.uuid)])).name, 'cli-fpga')

    await fails(
      ['device-profile', 'create', 'cli-fpga', GROUPS],
      /^cyborg device-profile create: POST \/v2\/device_profiles: HTTP 409: .*name/,
    )
    await fails(
      ['device-profile', 'create', 'bad', '[{"resources:FPGA": 1'],
      /^cyborg device-profile create: <groups> is not valid JSON \(.*\); expected e\.g\. /,
    )
    await fails(
      ['device-profile', 'create', 'bad', '{"resources:FPGA": 1}'],
      /<groups> must be a JSON list of objects/,
    )
    await fails(
      ['device-profile', 'create', 'bad', '[{"resources:fpga": "1"}]'],
      /HTTP 400: Invalid input for field 'groups\[0\]/,
    )

    const partly = await fails(
      ['device-profile', 'delete', 'cli-other', 'no-such-profile', '--format', 'json'],
      /^cyborg device-profile delete: 1 of 2 not deleted: DELETE \/v2\/device_profiles\/no-such-profile: HTTP 404: .*no-such-profile/,
    )
    assert.deepEqual(JSON.parse(partly.stdout), [{ deleted: 'cli-other' }])
    await fails(
      ['device-profile', 'show', 'cli-other'],
      /^cyborg device-profile show: GET \S+: HTTP 404: /,
    )
    assert.deepEqual(
      (await json<Json[]>(['device-profile', 'list'])).map((p) => p.name),
      ['cli-fpga'],
    )
  })

  it('creates, binds, shows, unbinds and deletes accelerator requests', async () => {
    await json(['device-profile', 'create', 'arq-fpga', GROUPS])
    const [dep] = await json<Json[]>(['deployable', 'list'])
    const instance = randomUUID()
    const created = await json<Json[]>(['arq', 'create', 'arq-fpga'])
    assert.equal(created.length, 1)
    const arq = created[0]!
    assert.equal(arq.state, 'Initial')
    assert.equal(arq.device_profile_name, 'arq-fpga')
    const uuid = String(arq.uuid)

    const bound = await json(['arq', 'bind', uuid, '--host', 'res-host', '--instance', instance])
    assert.equal(bound.state, 'Bound')
    assert.equal(bound.instance_uuid, instance)
    assert.equal(bound.hostname, 'res-host')
    assert.equal(
      bound.attach_handle_type,
      'TEST_PCI',
      'standalone: the conductor picked the fake device',
    )
    const listed = await json<Json[]>(['arq', 'list', '--instance', instance])
    assert.deepEqual(
      listed.map((a) => a.uuid),
      [uuid],
    )
    assert.deepEqual(await json(['arq', 'list', '--instance', randomUUID()]), [])
    const table = await cyborg(['arq', 'list'], env)
    assert.match(
      table.stdout,
      /^UUID +State +Device Profile +Group +Host +Instance +Provider +Handle Type +Handle\n/,
    )
    assert.ok(table.stdout.includes(`${uuid}  Bound  arq-fpga`), table.stdout)
    const record = await cyborg(['arq', 'show', uuid], env)
    assert.match(record.stdout, /\nstate +Bound\n/)
    await fails(
      ['arq', 'bind', uuid, '--host', 'res-host', '--instance', instance],
      /^cyborg arq bind: PATCH \S+: HTTP 409: /,
    )

    const unbound = await json(['arq', 'unbind', uuid])
    assert.equal(unbound.state, 'Unbound')
    assert.equal(unbound.instance_uuid, null)

    // Nova's path: the provider and the project (microversion 2.1 and later).
    const again = await json([
      'arq',
      'bind',
      uuid,
      '--host',
      'res-host',
      '--instance',
      instance,
      '--provider',
      String(dep!.rp_uuid),
      '--project',
      'p1',
    ])
    assert.equal(again.state, 'Bound')
    assert.equal(again.project_id, 'p1')

    // No device on that host: the bind ends BindFailed, printed, and exit code 1.
    const [other] = await json<Json[]>(['arq', 'create', 'arq-fpga'])
    const failed = await fails(
      [
        'arq',
        'bind',
        String(other!.uuid),
        '--host',
        'elsewhere',
        '--instance',
        randomUUID(),
        '--format',
        'json',
      ],
      /^cyborg arq bind: the bind failed \(BindFailed\): no active, enabled and free accelerator on host elsewhere fits profile arq-fpga/,
    )
    assert.equal((JSON.parse(failed.stdout) as Json).state, 'BindFailed')

    await fails(
      ['device-profile', 'delete', 'arq-fpga'],
      /^cyborg device-profile delete: 1 of 1 not deleted: DELETE \S+: HTTP 409: /,
    )
    const deleted = await cyborg(['arq', 'delete', uuid, String(other!.uuid)], env)
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.match(deleted.stdout, /^Deleted\n-+\n\S+\n\S+\n$/)
    await fails(
      ['arq', 'show', uuid],
      /^cyborg arq show: GET \/v2\/accelerator_requests\/\S+: HTTP 404: /,
    )
    await fails(
      ['arq', 'delete', uuid],
      /^cyborg arq delete: 1 of 1 not deleted: DELETE \S+: HTTP 404: /,
    )
    await fails(
      ['arq', 'create', 'no-such-profile'],
      /^cyborg arq create: POST \/v2\/accelerator_requests: HTTP 404: .*no-such-profile/,
    )
    assert.deepEqual(await json(['device-profile', 'delete', 'arq-fpga']), [
      { deleted: 'arq-fpga' },
    ])
  })

  it('documents every flag', async () => {
    const commands = [
      ['deployable', 'list'],
      ['deployable', 'show'],
      ['device-profile', 'list'],
      ['device-profile', 'show'],
      ['device-profile', 'create'],
      ['device-profile', 'delete'],
      ['arq', 'list'],
      ['arq', 'show'],
      ['arq', 'create'],
      ['arq', 'bind'],
      ['arq', 'unbind'],
      ['arq', 'delete'],
    ]
    for (const command of commands) {
      const help = await cyborg([...command, '--help'])
      assert.equal(help.code, 0)
      for (const flag of ['--url', '--token', '--format', 'CYBORG_URL', 'OS_TOKEN'])
        assert.ok(help.stdout.includes(flag), `${command.join(' ')}: ${flag}`)
    }
    const bind = (await cyborg(['arq', 'bind', '--help'])).stdout
    for (const flag of ['--host', '--instance', '--provider', '--project', 'BindFailed'])
      assert.ok(bind.includes(flag), flag)
    const missing = await cyborg(['arq', 'bind', randomUUID(), '--host', 'h'], env)
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /required option '--instance <uuid>' not specified/)
  })
})
