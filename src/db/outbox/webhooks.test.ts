/**
 * Webhook endpoints, deliveries and the dispatchers' leases on every database: reads never carry
 * the secret; an event queued twice for an endpoint is one row; a claimed endpoint is nobody
 * else's until its lease runs out or it is released, even when claims race on two connections;
 * an outcome is recorded only under the claim that holds the endpoint; a failed delivery holds
 * the endpoint back until its retry is due.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { openDatabase, type DatabaseHandle } from '../core/connection.js'
import {
  claimDueWebhooks,
  recordAttempts,
  releaseWebhookClaim,
  updateWebhookClaim,
  type AttemptOutcome,
} from './webhook-claims.js'
import {
  deleteDeliveredBefore,
  insertWebhookDeliveries,
  listPendingDeliveries,
} from './webhook-deliveries.js'
import { countWebhookDeliveries, listWebhookDeliveries } from '../reads/webhook-delivery-reads.js'
import { createWebhook, deleteWebhook, updateWebhook } from './webhooks.js'
import {
  getWebhook,
  getWebhookId,
  listWebhookTargets,
  listWebhooks,
} from '../reads/webhook-reads.js'

const t = (s: number) => `2026-11-25T10:00:${String(s).padStart(2, '0')}.000000+00:00`
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`

async function endpoint(db: DatabaseHandle, n: number, enabled = true) {
  await createWebhook(db.db, {
    uuid: uuid(n),
    url: `http://127.0.0.1:9/${n}`,
    secret: `whsec_c2VjcmV0LSR7bn0=`,
    eventTypes: n % 2 ? ['accelerator.arq.*'] : [],
    projectIds: [],
    description: `endpoint ${n}`,
    enabled,
    createdAt: t(0),
  })
  return getWebhookId(db.db, uuid(n))
}

const queue = (webhookId: number, events: number[], at = t(0)) =>
  events.map((e) => ({
    webhookId,
    eventUuid: uuid(1000 + e),
    eventType: 'accelerator.arq.bound',
    body: `{"n":${e}}`,
    createdAt: at,
  }))

const outcome = (state: AttemptOutcome['state'], at: string, next = at): AttemptOutcome => ({
  state,
  attempts: 1,
  at,
  status: state === 'delivered' ? 204 : 500,
  error: state === 'delivered' ? null : 'HTTP 500',
  nextAttemptAt: next,
})

/** One attempt recorded under `claim`; a pending one backs the endpoint off until its retry. */
const attempt = (
  db: DatabaseHandle['db'],
  claim: { webhookId: number; token: string; deliveryId: number },
  o: AttemptOutcome,
) =>
  recordAttempts(
    db,
    claim,
    [{ deliveryId: claim.deliveryId, outcome: o }],
    o.state === 'pending' ? o.nextAttemptAt : null,
  )

for (const dialect of await testDialects()) {
  await test(`webhooks and deliveries on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      const w1 = await endpoint(db, 1)
      const w2 = await endpoint(db, 2, false)
      const shown = await getWebhook(db.db, uuid(1))
      assert.equal('secret' in shown, false, 'reads never carry the secret')
      assert.deepEqual(shown.eventTypes, ['accelerator.arq.*'])
      assert.equal(shown.enabled, true)
      assert.deepEqual(
        (await listWebhooks(db.db)).map((w) => w.uuid),
        [uuid(1), uuid(2)],
      )
      assert.deepEqual(
        (await listWebhookTargets(db.db)).map((w) => w.id),
        [w1],
        'only enabled ones',
      )
      const changed = await updateWebhook(
        db.db,
        uuid(2),
        { enabled: true, projectIds: ['p'] },
        t(1),
      )
      assert.deepEqual(
        [changed.enabled, changed.projectIds, changed.updatedAt],
        [true, ['p'], t(1)],
      )
      await assert.rejects(updateWebhook(db.db, uuid(9), { enabled: false }, t(1)), {
        code: 'WEBHOOK_NOT_FOUND',
      })

      assert.equal(await insertWebhookDeliveries(db.db, queue(w1, [1, 2, 3])), 3)
      assert.equal(await insertWebhookDeliveries(db.db, queue(w1, [2, 3, 4])), 1, 'queued once')
      assert.equal(await insertWebhookDeliveries(db.db, queue(w2, [1])), 1)
      const head = (await listPendingDeliveries(db.db, w1, 1))[0]
      assert.equal(head?.eventUuid, uuid(1001), 'oldest first')

      // A claim holds the endpoint: a second one at the same time gets nothing.
      const claimA = await claimDueWebhooks(db, { token: 'A', now: t(1), until: t(5), limit: 8 })
      assert.deepEqual(
        claimA.map((w) => [w.id, w.url, w.secret.startsWith('whsec_')]),
        [
          [w1, 'http://127.0.0.1:9/1', true],
          [w2, 'http://127.0.0.1:9/2', true],
        ],
      )
      assert.deepEqual(
        await claimDueWebhooks(db, { token: 'B', now: t(2), until: t(6), limit: 8 }),
        [],
      )
      const claim = { webhookId: w1, token: 'B', deliveryId: head!.id }
      assert.equal(await attempt(db.db, claim, outcome('delivered', t(2))), false)
      assert.equal(await updateWebhookClaim(db.db, w1, 'B', t(9)), false, 'not its claim')
      assert.equal(await updateWebhookClaim(db.db, w1, 'A', t(9)), true)
      // The holder fails the head: the endpoint backs off until its retry is due.
      const failed = outcome('pending', t(2), t(20))
      assert.equal(await attempt(db.db, { ...claim, token: 'A' }, failed), true)
      await releaseWebhookClaim(db.db, w1, 'A', t(3))
      await releaseWebhookClaim(db.db, w2, 'A', t(3))
      const c = await claimDueWebhooks(db, { token: 'C', now: t(10), until: t(15), limit: 8 })
      assert.deepEqual(
        c.map((w) => w.id),
        [w2],
        'w1 backs off until t(20)',
      )
      // C never let w2 go: its lease runs out at t(15), then anyone may take it.
      const e = await claimDueWebhooks(db, { token: 'E', now: t(16), until: t(30), limit: 8 })
      assert.deepEqual(
        e.map((w) => w.id),
        [w2],
      )
      const d = await claimDueWebhooks(db, { token: 'D', now: t(21), until: t(25), limit: 8 })
      assert.deepEqual(
        d.map((w) => w.id),
        [w1],
        'w1 is due again; w2 is held by E',
      )
      const late = { webhookId: w2, token: 'C', deliveryId: 1 }
      assert.equal(await attempt(db.db, late, outcome('delivered', t(17))), false)

      const ok = { webhookId: w1, token: 'D', deliveryId: head!.id }
      assert.equal(await attempt(db.db, ok, outcome('delivered', t(22))), true)
      const second = (await listPendingDeliveries(db.db, w1, 1))[0]
      assert.equal(second?.eventUuid, uuid(1002))
      await attempt(db.db, { ...ok, deliveryId: second!.id }, outcome('dead', t(23)))
      assert.deepEqual(await countWebhookDeliveries(db.db, w1), {
        pending: 2,
        delivered: 1,
        dead: 1,
      })
      const dead = await listWebhookDeliveries(db.db, w1, { state: 'dead' })
      assert.deepEqual(
        dead.map((x) => [x.eventUuid, x.lastStatus, x.lastError, x.finishedAt]),
        [[uuid(1002), 500, 'HTTP 500', t(23)]],
      )
      const page = await listWebhookDeliveries(db.db, w1, { marker: uuid(1002), limit: 1 })
      assert.deepEqual(
        page.map((x) => x.eventUuid),
        [uuid(1003)],
      )
      await assert.rejects(listWebhookDeliveries(db.db, w1, { marker: uuid(1) }), {
        details: { field: 'marker', marker: uuid(1) },
      })
      assert.equal(await deleteDeliveredBefore(db.db, t(22)), 0)
      assert.equal(await deleteDeliveredBefore(db.db, t(59)), 1, 'delivered ones only')
      await deleteWebhook(db.db, uuid(1))
      assert.deepEqual(
        (await listWebhooks(db.db)).map((w) => w.uuid),
        [uuid(2)],
      )
      await assert.rejects(getWebhookId(db.db, uuid(1)), { code: 'WEBHOOK_NOT_FOUND' })
    } finally {
      await db.close()
    }
  })

  await test(
    `claims racing on two connections on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const db = await dialect.create()
      const other = dialect.name === 'sqlite' ? db : await openDatabase(db.url)
      try {
        const ids: number[] = []
        for (let n = 1; n <= 12; n++) ids.push(await endpoint(db, n))
        for (const id of ids) await insertWebhookDeliveries(db.db, queue(id, [1]))
        for (let round = 0; round < 5; round++) {
          const now = t(round * 10)
          const until = t(round * 10 + 5)
          const claims = await Promise.all(
            [db, other, db, other].map((h, i) =>
              claimDueWebhooks(h, { token: `r${round}-${i}`, now, until, limit: 5 }),
            ),
          )
          const claimed = claims.flat().map((w) => w.id)
          assert.equal(new Set(claimed).size, claimed.length, `round ${round}: no endpoint twice`)
          assert.ok(claimed.length >= 5, `round ${round}: ${claimed.length} claimed`)
        }
      } finally {
        if (other !== db) await other.close()
        await db.close()
      }
    },
  )
}
