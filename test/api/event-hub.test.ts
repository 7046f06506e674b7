/**
 * The event stream's poller (src/api/v2/event-hub.ts) on every database: from "now", and, on
 * PostgreSQL and MariaDB, an event that commits after a higher id is still handed out (late).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { testDialects } from '../support/db.js'
import { anEvent } from '../support/events.js'
import { insertEvents } from '../../src/db/outbox/events.js'
import { createEventHub, type HubEvent } from '../../src/api/v2/event-hub.js'

for (const dialect of await testDialects()) {
  await test(`event stream poller on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    const hub = createEventHub(db.db, pino({ level: 'silent' }), { pollMs: 20 })
    try {
      await insertEvents(db.db, [anEvent('accelerator.agent.up', 'before')])
      const got: HubEvent[] = []
      let waiting: (() => void) | undefined
      const remove = await hub.add({
        deliver: (events) => {
          got.push(...events)
          waiting?.()
        },
        heartbeat: () => {},
        close: () => {},
      })
      const until = async (count: number) => {
        while (got.length < count) await new Promise<void>((r) => (waiting = r))
      }
      await insertEvents(db.db, [anEvent('accelerator.agent.up', 'after')])
      await until(1)
      assert.equal(got[0]!.event.resource_uuid, 'after', 'from now on: the older one is not sent')
      if (dialect.name !== 'sqlite') {
        // Out of id order: a transaction takes an id, a later one commits first.
        let commit!: () => void
        let taken!: () => void
        const tookId = new Promise<void>((r) => (taken = r))
        const slow = db.db.transaction().execute(async (trx) => {
          await insertEvents(trx, [anEvent('accelerator.agent.up', 'slow')])
          taken()
          await new Promise<void>((r) => (commit = r))
        })
        await tookId
        await insertEvents(db.db, [anEvent('accelerator.agent.up', 'fast')])
        await until(2)
        assert.equal(got[1]!.event.resource_uuid, 'fast')
        commit()
        await slow
        await until(3)
        assert.equal(got[2]!.event.resource_uuid, 'slow')
        assert.equal(got[2]!.late, true)
        assert.ok(got[2]!.event.id < got[1]!.event.id)
        assert.deepEqual(
          hub.recentLate().map((e) => e.resource_uuid),
          ['slow'],
        )
      }
      remove()
      assert.equal(hub.size, 0)
    } finally {
      hub.close()
      await db.close()
    }
  })
}
