/**
 * kill -9 of the conductor in the middle of a bind storm (`cyborg api` + `cyborg conductor` over
 * PostgreSQL and RabbitMQ). After a new conductor starts: no accelerator request is lost, none
 * stays BindStarted past `[DEFAULT] bind_timeout` (the reaper), and every handle in use belongs to
 * exactly one Bound request.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects, type TestDatabase } from '../../src/db/testing.js'
import { testBroker, type TestVhost } from '../../src/bus/rabbitmq-testing.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { STORM_HOST, STORM_PROFILE, seedStorm } from '../support/storm-inventory.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'

const [dialects, broker] = await Promise.all([testDialects(), testBroker()])
const postgres = dialects.find((d) => d.name === 'postgres')
const skip = postgres?.skip ?? broker.skip
const BIND_TIMEOUT_S = 2
const VMS = 120

const title = 'kill -9 of the conductor mid-bind: nothing lost, nothing left binding'
if (skip !== undefined) void it(title, { skip }, () => {})
else void describe(title, { timeout: 120_000 }, () => {
  let db: TestDatabase
  let vhost: TestVhost
  let env: Record<string, string>
  const started: RunningService[] = []
  const start = async (command: string, extra: Record<string, string> = {}) => {
    const s = await startService({
      command: [command],
      env: { ...env, ...extra },
      ready: command === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${command} is ready"`)),
    })
    started.push(s)
    return s
  }

  before(async () => {
    ;[db, vhost] = await Promise.all([postgres!.create(), broker.createVhost()])
    env = {
      CYBORG_DATABASE__CONNECTION: db.url,
      CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
      CYBORG_DEFAULT__BIND_TIMEOUT: String(BIND_TIMEOUT_S),
      CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '3',
      CYBORG_LOG_LEVEL: 'info',
    }
    const sync = await runCommand(['db', 'sync'], env)
    assert.equal(sync.code, 0, sync.output)
  })
  after(async () => {
    for (const s of started) if (s.child.exitCode === null) s.child.kill('SIGKILL')
    await Promise.all(started.map((s) => s.stop().catch(() => null)))
    await vhost?.drop()
    await db?.close()
  })

  void it('binds through a conductor crash and converges', async (t) => {
    let conductor = await start('conductor')
    const api = await start('api')
    const bus = await createRabbitMqBus({ url: vhost.url })
    await seedStorm(createConductorClient(bus, { timeoutMs: 10_000 }), 2, 64) // 128 handles
    await bus.close()
    const { deployables } = (await (await fetch(`${api.url}/v2/deployables`)).json()) as { deployables: { name: string; rp_uuid: string }[] }
    const rps = deployables.filter((d) => d.name.startsWith(`${STORM_HOST}_`)).map((d) => d.rp_uuid)

    const uuids: string[] = []
    for (let i = 0; i < VMS; i++) {
      const res = await fetch(`${api.url}/v2/accelerator_requests`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_profile_name: STORM_PROFILE }),
      })
      assert.equal(res.status, 201, await res.clone().text())
      uuids.push(...((await res.json()) as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid))
    }
    // The storm: one PATCH per VM, all at once; the conductor dies while they run.
    const storm = Promise.all(
      uuids.map((uuid, i) =>
        fetch(`${api.url}/v2/accelerator_requests`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            [uuid]: [
              { path: '/hostname', op: 'add', value: STORM_HOST },
              { path: '/device_rp_uuid', op: 'add', value: rps[i % rps.length] },
              { path: '/instance_uuid', op: 'add', value: `c0de0000-0000-4000-8000-${String(i).padStart(12, '0')}` },
            ],
          }),
        }).then((r) => r.status),
      ),
    )
    await new Promise((r) => setTimeout(r, 40))
    const killed = new Promise((r) => conductor.child.once('exit', r))
    conductor.child.kill('SIGKILL')
    await killed
    const statuses = await storm
    assert.ok(statuses.every((s) => s === 202 || s === 503), `only 202 or 503: ${[...new Set(statuses)].join(', ')}`)
    const binding = await db.db.selectFrom('accelerator_requests').select('uuid').where('state', '=', 'BindStarted').execute()
    // The kill must have caught the storm in flight, else this test proves nothing.
    assert.ok(statuses.includes(503) || binding.length > 0, 'the conductor died after the storm was over')
    t.diagnostic(`at the kill: ${statuses.filter((s) => s === 202).length} answered 202, ${statuses.filter((s) => s === 503).length} 503; ${binding.length} left BindStarted`)

    conductor = await start('conductor')
    // The reaper runs every bind_timeout / 4; give it two timeouts.
    const deadline = Date.now() + BIND_TIMEOUT_S * 1000 * 3 + 5000
    let rows: { uuid: string; state: string; attach_handle_id: number | null }[]
    for (;;) {
      rows = await db.db.selectFrom('accelerator_requests').select(['uuid', 'state', 'attach_handle_id']).execute()
      if (!rows.some((r) => r.state === 'BindStarted') || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 250))
    }
    assert.deepEqual(new Set(rows.map((r) => r.uuid)), new Set(uuids), 'no request lost')
    assert.deepEqual(rows.filter((r) => r.state === 'BindStarted'), [], 'none left binding')
    const bound = rows.filter((r) => r.state === 'Bound')
    const inUse = await db.db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute()
    assert.deepEqual(new Set(inUse.map((h) => h.id)), new Set(bound.map((r) => r.attach_handle_id)), 'handles in use = handles of Bound requests')
    assert.equal(new Set(bound.map((r) => r.attach_handle_id)).size, bound.length, 'no handle twice')
    assert.ok(rows.every((r) => ['Initial', 'Bound', 'BindFailed'].includes(r.state)), [...new Set(rows.map((r) => r.state))].join(','))
  })
})
