/**
 * `cyborg webhook …` (the built bin/cyborg) against the embedded `cyborg up` (in-process bus,
 * SQLite): the secret printed once, events delivered and signed with it, a disabled endpoint,
 * dead letters listed with `deliveries --state dead`, delete, and one-line failures.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startService, type RunningService } from '../support/service.js'
import { cyborg, cyborgFails, cyborgJson } from '../support/cli.js'
import { startReceiver, waitFor, type Receiver } from '../support/webhook-receiver.js'

type Json = Record<string, unknown>

describe('cyborg webhook commands against cyborg up', () => {
  let service: RunningService
  let receiver: Receiver
  let env: Record<string, string>
  const json = <T = Json>(args: string[]) => cyborgJson<T>(args, env)

  before(async () => {
    receiver = await startReceiver()
    service = await startService({
      env: {
        CYBORG_DEFAULT__HOST: 'hook-host',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_WEBHOOKS__MAX_ATTEMPTS: '2',
        CYBORG_WEBHOOKS__TIMEOUT_SECONDS: '2',
      },
    })
    env = { CYBORG_URL: service.url }
    const profile = await cyborg(
      ['device-profile', 'create', 'dp-hook', '[{"resources:FPGA": 1}]'],
      env,
    )
    assert.equal(profile.code, 0, profile.stderr)
  })
  after(async () => {
    await receiver.close()
    assert.equal(await service.stop(), 0, service.output())
  })

  it('creates a webhook, shows its secret once, and delivers signed events', async () => {
    const table = await cyborg(
      ['webhook', 'create', receiver.url, '--event', 'accelerator.arq.*', '--description', 'audit'],
      env,
    )
    assert.equal(table.code, 0, table.stderr)
    const secret = /\nsecret +(whsec_\S+)\n/.exec(table.stdout)?.[1]
    assert.ok(secret, table.stdout)
    assert.match(table.stderr, /shown only now/)
    receiver.secret = secret
    const uuid = /\nuuid +(\S+)\n/.exec(table.stdout)![1]!
    const listed = await cyborg(['webhook', 'list'], env)
    assert.match(listed.stdout, /^UUID +URL +Events +Projects +Enabled +Description\n/)
    assert.ok(listed.stdout.includes(`accelerator.arq.*  all`), listed.stdout)
    const shown = await cyborg(['webhook', 'show', uuid], env)
    assert.ok(!shown.stdout.includes(secret) && !/\nsecret /.test(shown.stdout), shown.stdout)

    const [arq] = await json<Json[]>(['arq', 'create', 'dp-hook'])
    await waitFor(() => receiver.accepted().length === 1, 'the arq.created delivery')
    const [got] = receiver.received
    assert.equal(got!.invalid, null)
    assert.equal(got!.body.type, 'accelerator.arq.created')
    assert.equal(got!.body.data.resource_uuid, arq!.uuid)
    const delivered = await json<Json[]>(['webhook', 'deliveries', uuid, '--state', 'delivered'])
    assert.deepEqual(
      delivered.map((d) => [d.event_uuid, d.state, d.attempts, d.last_status]),
      [[got!.id, 'delivered', 1, 204]],
    )

    const off = await json(['webhook', 'set', uuid, '--disable'])
    assert.equal(off.enabled, false)
    await json(['arq', 'create', 'dp-hook'])
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(receiver.received.length, 1, 'nothing for a disabled endpoint')
  })

  it('lists dead letters, deletes, and fails in one line', async () => {
    const created = await json(['webhook', 'create', 'http://127.0.0.1:9/closed'])
    const uuid = String(created.uuid)
    await json(['arq', 'create', 'dp-hook'])
    let dead: Json[] = []
    await waitFor(async () => {
      dead = await json<Json[]>(['webhook', 'deliveries', uuid, '--state', 'dead'])
      return dead.length > 0
    }, 'a dead letter')
    assert.equal(dead[0]!.attempts, 2)
    assert.match(String(dead[0]!.last_error), /no answer/)
    const table = await cyborg(['webhook', 'deliveries', uuid, '--state', 'dead'], env)
    assert.match(table.stdout, /^Event \(webhook-id\) +Type +State +Attempts/)
    await cyborgFails(['webhook', 'create', 'ftp://x/'], env, /field 'url'.*http or https/)
    await cyborgFails(
      ['webhook', 'create', 'http://x/', '--event', 'accelerator.arq.bond'],
      env,
      /field 'event_types\[0\]'.*unknown event type/,
    )
    await cyborgFails(['webhook', 'deliveries', uuid, '--state', 'lost'], env, /field 'state'/)
    await cyborgFails(['webhook', 'set', uuid], env, /nothing to change/)
    const deleted = await json<Json[]>(['webhook', 'delete', uuid])
    assert.deepEqual(deleted, [{ deleted: uuid }])
    await cyborgFails(['webhook', 'show', uuid], env, /webhook .* not found/)
  })
})
