/**
 * The v1 write commands (`accelerator create|set-spec|ready|attach|delete`) and
 * `attach-instance`/`detach-instance` of the built bin/cyborg against a running `cyborg up` whose
 * fake device starts inactive: tables and JSON, the ETag guard, v1 and v2 attachments side by side,
 * and one-line failures with exit code 1.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startService, type RunningService } from '../support/service.js'
import { cyborg, cyborgFails, cyborgJson } from '../support/cli.js'

const GROUPS = '[{"resources:FPGA": 1, "trait:CUSTOM_FAKE_DEVICE": "required"}]'

type Json = Record<string, unknown>
interface Attachment {
  api: string
  accelerator: string | null
  request: string | null
  instance_uuid: string
  hostname: string | null
  state: string
}

describe('cyborg v1 write and attach commands against cyborg up', () => {
  let service: RunningService
  let env: Record<string, string>
  let acc: string
  const json = <T = Json>(args: string[]) => cyborgJson<T>(args, env)
  const fails = (args: string[], pattern: RegExp) => cyborgFails(args, env, pattern)
  const show = (uuid: string) => json(['accelerator', 'show', uuid])

  before(async () => {
    service = await startService({
      env: { CYBORG_DEFAULT__HOST: 'att-host', CYBORG_AGENT__ENABLED_DRIVERS: 'fake, remote' },
      ready: async (url) => {
        const r = await fetch(`${url}/v1/accelerators`)
        return r.ok && ((await r.json()) as { accelerators: unknown[] }).accelerators.length > 0
      },
    })
    env = { CYBORG_URL: service.url }
    const [fake] = (await json<Json[]>(['accelerator', 'list', '--host', 'att-host'])).filter(
      (a) => a.name === 'att_host_FakeDevice',
    )
    acc = String(fake!.uuid)
  })
  after(async () => {
    assert.equal(await service.stop(), 0, service.output())
  })

  it('marks an inactive accelerator ready: it becomes active; again is a one-line 409', async () => {
    assert.equal((await show(acc)).lifecycle, 'inactive')
    await fails(
      ['accelerator', 'attach', acc, '--instance', randomUUID()],
      /^cyborg accelerator attach: PUT \S+: HTTP 409: .*inactive/,
    )
    const ready = await cyborg(['accelerator', 'ready', acc], env)
    assert.equal(ready.code, 0, ready.stderr)
    assert.equal(ready.stderr, '', 'no progress line when stderr is not a terminal')
    assert.match(ready.stdout, /\nlifecycle +active\n/)
    await fails(
      ['accelerator', 'ready', acc],
      /^cyborg accelerator ready: POST \/v1\/accelerators\/\S+\/ready: HTTP 409: .*active/,
    )
    await fails(['accelerator', 'ready', randomUUID()], /HTTP 404: accelerator \S+ not found/)
  })

  it('sets the spec by keys or whole, guarded by the ETag', async () => {
    const set = await json([
      'accelerator',
      'set-spec',
      acc,
      '--set',
      'num=2',
      '--set',
      'acc_capability.ipsec=aes',
    ])
    const spec = set.acc_specs as Json
    assert.equal(spec.num, 2)
    assert.equal((spec.acc_capability as Json).ipsec, 'aes')
    assert.equal(spec.remote, 0, 'the other keys are kept')
    const whole = { remote: 0, num: 1, device_type: 'FPGA', acc_capability: { num: 1 } }
    assert.deepEqual(
      (await json(['accelerator', 'set-spec', acc, '--spec', JSON.stringify(whole)])).acc_specs,
      whole,
    )

    // An ETag read earlier: good once; after that change it is stale, and nothing is overwritten.
    const etag = (await fetch(`${service.url}/v1/accelerators/${acc}`)).headers.get('etag')!
    assert.ok(etag)
    assert.equal(
      (
        await json<{ acc_specs: Json }>([
          'accelerator',
          'set-spec',
          acc,
          '--set',
          'num=3',
          '--if-match',
          etag,
        ])
      ).acc_specs.num,
      3,
    )
    await fails(
      ['accelerator', 'set-spec', acc, '--set', 'num=4', '--if-match', etag],
      RegExp(
        /^cyborg accelerator set-spec: another process updated the spec of accelerator \S+ /
          .source +
          /\(it is no longer .*\); show it with `cyborg accelerator show \S+` and try again \(PUT \S+: HTTP 409: /
            .source,
      ),
    )
    assert.equal(((await show(acc)).acc_specs as Json).num, 3)

    await fails(['accelerator', 'set-spec', acc], /give either --spec JSON .* or --set key=value/)
    await fails(
      ['accelerator', 'set-spec', acc, '--spec', '{}', '--set', 'num=1'],
      /give either --spec JSON/,
    )
    await fails(['accelerator', 'set-spec', acc, '--spec', '[1]'], /--spec must be a JSON object/)
    await fails(['accelerator', 'set-spec', acc, '--spec', '{"num": '], /--spec is not valid JSON/)
    await fails(['accelerator', 'set-spec', acc, '--set', 'num'], /--set "num": expected key=value/)
    await fails(['accelerator', 'set-spec', acc, '--set', 'num=-1'], /HTTP 400: .*'acc_specs\.num'/)
  })

  it('attaches to an instance and to a host, and detaches', async () => {
    const instance = randomUUID()
    const attached = await json<{ attached_to: string[]; attachments: Json[] }>([
      'accelerator',
      'attach',
      acc,
      '--instance',
      instance,
    ])
    assert.deepEqual(attached.attached_to, [instance])
    assert.equal(attached.attachments[0]!.api, 'v1')
    const host = await cyborg(['accelerator', 'attach', acc, '--host', 'att-host'], env)
    assert.equal(host.code, 0, host.stderr)
    assert.ok(host.stdout.includes(`["${instance}","host:att-host"]`), host.stdout)
    await fails(['accelerator', 'attach', acc], /give either --instance UUID or --host HOSTNAME/)
    await fails(['accelerator', 'attach', acc, '--host', 'elsewhere'], /HTTP 400: .*'hostname'/)

    const one = await cyborg(['accelerator', 'delete', acc, '--instance', instance], env)
    assert.equal(one.code, 0, one.stderr)
    assert.match(
      one.stdout,
      new RegExp(`^Accelerator +Detached\\n-+ +-+\\n${acc} +${instance}\\n$`),
    )
    assert.deepEqual((await show(acc)).attached_to, ['host:att-host'])
    assert.deepEqual(await json(['accelerator', 'delete', acc]), [
      { accelerator: acc, detached: 'every v1 attachment' },
    ])
    assert.deepEqual((await show(acc)).attached_to, [])
    await fails(
      ['accelerator', 'delete', randomUUID()],
      /^cyborg accelerator delete: DELETE \S+: HTTP 404: /,
    )
  })

  it('attach-instance and detach-instance through v1 and v2', async () => {
    assert.deepEqual(
      await json(['device-profile', 'create', 'att-fpga', GROUPS]).then((p) => p.name),
      'att-fpga',
    )
    const vm1 = randomUUID()
    const vm2 = randomUUID()
    const [v1] = await json<Attachment[]>(['attach-instance', vm1, '--accelerator', acc])
    assert.deepEqual(
      { ...v1!, request: null },
      {
        api: 'v1',
        accelerator: acc,
        request: null,
        instance_uuid: vm1,
        hostname: 'att-host',
        state: 'Bound',
      },
    )
    const v2 = await cyborg(
      ['attach-instance', vm2, '--profile', 'att-fpga', '--host', 'att-host'],
      env,
    )
    assert.equal(v2.code, 0, v2.stderr)
    assert.match(v2.stdout, /^API +Accelerator +Request +Instance +Host +State\n/)
    assert.match(v2.stdout, new RegExp(`\\nv2 +${acc} +\\S+ +${vm2} +att-host +Bound\\n$`))
    const [arq] = await json<Json[]>(['arq', 'list', '--instance', vm2])
    assert.equal(arq!.state, 'Bound')

    // A host with no device: BindFailed, exit 1, and the requests it created are gone.
    const vm3 = randomUUID()
    const failed = await fails(
      ['attach-instance', vm3, '--profile', 'att-fpga', '--host', 'elsewhere', '--format', 'json'],
      /^cyborg attach-instance: the bind failed \(BindFailed\): .*host elsewhere fits profile att-fpga.*; its 1 new request\(s\) were deleted\n$/,
    )
    assert.equal((JSON.parse(failed.stdout) as Attachment[])[0]!.state, 'BindFailed')
    assert.deepEqual(await json(['arq', 'list', '--instance', vm3]), [])

    // v1 detach leaves v2's requests alone, and refuses when only they hold the accelerator.
    const [gone] = await json<Attachment[]>(['detach-instance', vm1, '--accelerator', acc])
    assert.equal(gone!.state, 'detached')
    assert.deepEqual((await show(acc)).attached_to, [vm2])
    await fails(['accelerator', 'delete', acc], /HTTP 409: .*outside v1/)

    // Without --accelerator: every v1 attachment and every v2 request of the instance.
    await json(['attach-instance', vm2, '--accelerator', acc])
    const detached = await json<Attachment[]>(['detach-instance', vm2])
    assert.deepEqual(
      detached.map((d) => [d.api, d.accelerator, d.state]),
      [
        ['v1', acc, 'detached'],
        ['v2', acc, 'deleted'],
      ],
    )
    assert.deepEqual((await show(acc)).attached_to, [])
    assert.deepEqual(await json(['arq', 'list', '--instance', vm2]), [])
    assert.deepEqual(await json(['detach-instance', vm2]), [], 'nothing left to detach')

    await fails(
      ['attach-instance', vm1],
      /give either --accelerator UUID or --profile NAME --host HOSTNAME/,
    )
    await fails(
      ['attach-instance', vm1, '--profile', 'att-fpga'],
      /--profile needs --host HOSTNAME/,
    )
    await fails(
      ['attach-instance', vm1, '--accelerator', acc, '--host', 'att-host'],
      /--host goes with --profile/,
    )
    await fails(
      ['attach-instance', vm1, '--accelerator', randomUUID()],
      /^cyborg attach-instance: PUT \S+: HTTP 404: accelerator \S+ not found\n$/,
    )
    await fails(
      ['attach-instance', vm1, '--profile', 'no-such', '--host', 'att-host'],
      /^cyborg attach-instance: POST \/v2\/accelerator_requests: HTTP 404: .*no-such/,
    )
  })

  it('registers a remote accelerator: printed from its Location, inactive; the same name again is a one-line 409', async () => {
    const uuid = randomUUID()
    const created = await json(['accelerator', 'create', 'rack-1', '--uuid', uuid])
    assert.equal(created.uuid, uuid)
    assert.equal(created.name, 'rack-1')
    assert.equal(created.lifecycle, 'inactive')
    assert.equal(created.hostname, 'att-host')
    const table = await cyborg(['accelerator', 'create', 'rack-2'], env)
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /\nname +rack-2\n/)
    assert.deepEqual((await json<Json[]>(['accelerator', 'list'])).map((a) => a.name).sort(), [
      'att_host_FakeDevice',
      'rack-1',
      'rack-2',
    ])
    await fails(
      ['accelerator', 'create', 'rack-1'],
      /^cyborg accelerator create: POST \/v1\/accelerators: HTTP 409: .*rack-1/,
    )
    await fails(
      ['accelerator', 'create', 'rack-3', '--uuid', 'nope'],
      /^cyborg accelerator create: POST \/v1\/accelerators: HTTP 400: .*'uuid'/,
    )
  })

  it('documents every flag', async () => {
    const commands: [string[], string[]][] = [
      [['accelerator', 'create'], ['--uuid']],
      [
        ['accelerator', 'set-spec'],
        ['--spec', '--set', '--if-match', 'ETag'],
      ],
      [['accelerator', 'ready'], []],
      [
        ['accelerator', 'attach'],
        ['--instance', '--host'],
      ],
      [
        ['accelerator', 'delete'],
        ['--instance', 'detach'],
      ],
      [['attach-instance'], ['--accelerator', '--profile', '--host', 'BindFailed']],
      [['detach-instance'], ['--accelerator']],
    ]
    for (const [command, flags] of commands) {
      const help = await cyborg([...command, '--help'])
      assert.equal(help.code, 0)
      for (const flag of ['--url', '--token', '--format', 'CYBORG_URL', 'OS_TOKEN', ...flags])
        assert.ok(help.stdout.includes(flag), `${command.join(' ')}: ${flag}`)
    }
  })
})
