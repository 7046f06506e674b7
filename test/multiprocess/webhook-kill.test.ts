/**
 * kill -9 of the conductor in the middle of a bind storm, with a webhook registered for
 * `accelerator.arq.bound`: afterwards every ARQ that ended Bound has had its event delivered at
 * least once to the receiver, none is missing, and every request verified against the secret.
 * Production shape on PostgreSQL: `cyborg api` + `cyborg conductor` over RabbitMQ; the storm
 * host's handles are TEST_PCI (no agent work). The receiver answers the first deliveries, then
 * holds every answer until the conductor is dead (a gate the test opens, not a timer to race), so
 * that the kill finds bound events not yet delivered: in the outbox, queued, or in flight, claimed
 * by the dead conductor (its lease runs out, then the new conductor sends them again). Only
 * answers that reached a live conductor count as deliveries.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects, type TestDatabase } from '../support/db.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { seedStorm } from '../support/storm-inventory.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'
import {
  assertConverged,
  bindStorm,
  createStormArqs,
  stormProviders,
  tally,
} from '../support/arq-storm.js'
import { startReceiver, waitFor, type Receiver } from '../support/webhook-receiver.js'

const [dialects, broker] = await Promise.all([testDialects(), testBroker()])
const postgres = dialects.find((d) => d.name === 'postgres')!
const VMS = 160
const BIND_TIMEOUT_S = 2
/** Deliveries answered before the receiver holds its answers. */
const ANSWERED_FIRST = 3
/** Bound requests past the answered deliveries before the kill. */
const GAP = 25

const started: RunningService[] = []
const startCyborg = async (command: 'api' | 'conductor', env: Record<string, string>) => {
  const s = await startService({
    command: [command],
    env,
    ready: command === 'conductor' ? printed(/"msg":"cyborg conductor is ready"/) : undefined,
  })
  started.push(s)
  return s
}

after(async () => {
  for (const s of started) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  await Promise.all(started.map((s) => s.stop().catch(() => null)))
})

const bound = async (db: TestDatabase) =>
  (
    await db.db
      .selectFrom('accelerator_requests')
      .select('uuid')
      .where('state', '=', 'Bound')
      .execute()
  ).map((r) => r.uuid)

void describe(
  'kill -9 of the conductor mid bind storm: every bound ARQ is announced to the webhook',
  { skip: postgres.skip ?? broker.skip, timeout: 120_000 },
  () => {
    let db: TestDatabase
    let vhost: TestVhost
    let receiver: Receiver
    let env: Record<string, string>
    let conductor: RunningService
    let apiUrl: string

    before(async () => {
      ;[db, vhost] = await Promise.all([postgres.create(), broker.createVhost()])
      receiver = await startReceiver({ holdAfter: ANSWERED_FIRST })
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__BIND_TIMEOUT: String(BIND_TIMEOUT_S),
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '3',
        CYBORG_DEFAULT__SERVICE_DOWN_TIME: '3600',
        CYBORG_WEBHOOKS__TIMEOUT_SECONDS: '2',
        CYBORG_LOG_LEVEL: 'info',
      }
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      conductor = await startCyborg('conductor', env)
      apiUrl = (await startCyborg('api', env)).url
      const bus = await createRabbitMqBus({ url: vhost.url })
      await seedStorm(createConductorClient(bus, { timeoutMs: 10_000 }), 3, 64, 'TEST_PCI')
      await bus.close()
    })
    after(async () => {
      await receiver?.close()
      await vhost?.drop()
      await db?.close()
    })

    it('delivers every accelerator.arq.bound at least once across the kill', async (t) => {
      /** Deliveries accepted, their answer handed to a live conductor. */
      const delivered = () => receiver.accepted().filter((r) => r.answered)
      const res = await fetch(`${apiUrl}/v2/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, event_types: ['accelerator.arq.bound'] }),
      })
      assert.equal(res.status, 201, await res.clone().text())
      receiver.secret = ((await res.json()) as { secret: string }).secret

      const providers = await stormProviders(apiUrl)
      const uuids = await createStormArqs(apiUrl, VMS)
      const storm = bindStorm(apiUrl, uuids, providers)
      let over = false
      void storm.finally(() => (over = true))
      // Kill once deliveries have begun and are held (in flight, claimed by the conductor) and
      // bound events are waiting behind them. While the receiver holds its answers no more than
      // ANSWERED_FIRST deliveries can complete, so the gap cannot close before the kill.
      await waitFor(
        async () =>
          over || (receiver.held() >= 1 && (await bound(db)).length >= ANSWERED_FIRST + GAP),
        'deliveries held, behind the binds',
        30_000,
      )
      const overAtKill = over
      const heldAtKill = receiver.held()
      const gone = new Promise((r) => conductor.child.once('exit', r))
      conductor.child.kill('SIGKILL')
      await gone
      // Counted once the conductor is gone: it binds and delivers, so neither count moves now.
      const boundAtKill = (await bound(db)).length
      const deliveredAtKill = new Set(delivered().map((r) => String(r.body.data.resource_uuid)))
        .size
      // The dead conductor never learns of the answers held: once their connections are seen
      // closed, the receiver answers again (the held ones go nowhere).
      await waitFor(() => receiver.held() === 0, 'the connections of the dead conductor closed')
      receiver.open()
      const killedAt = Date.now()
      const outcomes = await storm
      t.diagnostic(
        `at the kill: ${boundAtKill} Bound, ${deliveredAtKill} delivered, ${heldAtKill} held, ` +
          `binds ${overAtKill ? 'over' : 'under way'}; ${tally(outcomes, 0)}`,
      )
      assert.ok(!overAtKill, 'the kill landed during the storm')
      assert.ok(heldAtKill >= 1, 'deliveries were in flight at the kill')
      assert.ok(deliveredAtKill < boundAtKill, 'bound events were still to be delivered')

      conductor = await startCyborg('conductor', env)
      const answered = uuids.filter((_, i) => outcomes[i] === 202)
      t.diagnostic(
        await assertConverged(db.db, uuids, answered, Date.now() + BIND_TIMEOUT_S * 3000 + 5000),
      )
      const boundNow = new Set(await bound(db))
      const announced = () => new Set(delivered().map((r) => String(r.body.data.resource_uuid)))
      await waitFor(
        () => [...boundNow].every((u) => announced().has(u)),
        'every Bound ARQ announced',
        60_000,
      )
      const missing = [...boundNow].filter((u) => !announced().has(u))
      assert.deepEqual(missing, [], 'no bound ARQ missing')
      const extra = [...announced()].filter((u) => !boundNow.has(u))
      assert.deepEqual(extra, [], 'nothing announced that did not end Bound')
      assert.deepEqual(
        receiver.received.filter((r) => r.invalid !== null).map((r) => r.invalid),
        [],
        'every request verifies',
      )
      assert.ok(receiver.accepted().every((r) => r.body.type === 'accelerator.arq.bound'))
      const ids = receiver.received.map((r) => r.id)
      t.diagnostic(
        `${boundNow.size} Bound, ${ids.length} requests (${ids.length - new Set(ids).size} ` +
          `sent again), all within ${Math.round((Date.now() - killedAt) / 1000)} s of the kill`,
      )
    })
  },
)
