/**
 * A running dispatcher takes reloaded `[webhooks]` options (SIGHUP, src/main/reload.ts): the
 * attempts and the time limit that apply are those in force when each attempt starts.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { startReceiver, waitFor } from '../../../test/support/webhook-receiver.js'
import { listWebhookDeliveries } from '../../db/reads/webhook-delivery-reads.js'
import { createWebhook } from '../../db/outbox/webhooks.js'
import { getWebhookId } from '../../db/reads/webhook-reads.js'
import { newUuid } from '../../domain/ids.js'
import { noopLogger } from '../../domain/logger.js'
import { formatTimestamp, systemClock } from '../../domain/time.js'
import { newWebhookSecret } from '../../domain/webhooks/webhook-signature.js'
import { createWebhookDispatcher } from './webhook-dispatcher.js'
import { createWebhookSink } from './webhook-sink.js'

const now = () => formatTimestamp(new Date())
const [sqlite] = await testDialects()

await test('reconfigure: fewer attempts and a shorter time limit apply to the next attempts', async () => {
  const db = await sqlite!.create()
  // Answers after 300 ms: in time under the first limit (2 s), too late under the reloaded one.
  const slow = await startReceiver({ answer: () => 503, delayMs: 300 })
  const dispatcher = createWebhookDispatcher(
    { db, log: noopLogger, clock: systemClock },
    { timeoutMs: 2000, backoffMs: 20, maxBackoffMs: 40, pollIntervalMs: 25, maxAttempts: 50 },
  )
  try {
    const uuid = newUuid()
    slow.secret = newWebhookSecret()
    await createWebhook(db.db, {
      uuid,
      url: slow.url,
      secret: slow.secret,
      eventTypes: [],
      projectIds: [],
      description: null,
      enabled: true,
      createdAt: now(),
    })
    const id = await getWebhookId(db.db, uuid)
    const sink = createWebhookSink({ db, now, onQueued: dispatcher.wake })
    const eventUuid = newUuid()
    await sink.deliver([
      {
        id: 1,
        uuid: eventUuid,
        eventType: 'accelerator.device.added',
        priority: 'INFO',
        resourceType: 'device',
        resourceUuid: newUuid(),
        projectId: null,
        payload: {},
        createdAt: now(),
      },
    ])
    dispatcher.start()
    await waitFor(() => slow.received.length >= 1, 'a first attempt under the old options')
    dispatcher.reconfigure({ maxAttempts: 3, timeoutMs: 100 })
    await waitFor(async () => {
      const [d] = await listWebhookDeliveries(db.db, id, { state: 'dead' })
      return d !== undefined
    }, 'a dead letter after 3 attempts')
    const [dead] = await listWebhookDeliveries(db.db, id)
    assert.equal(dead?.attempts, 3)
    assert.equal(dead?.lastStatus, null, 'the last attempt ran out of the reloaded 100 ms')
    assert.match(dead?.lastError ?? '', /no answer within 0\.1 s/)
  } finally {
    await dispatcher.stop()
    await slow.close()
    await db.close()
  }
})
