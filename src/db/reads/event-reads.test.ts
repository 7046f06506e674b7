/**
 * The events read model (src/db/reads/event-reads.ts)
 * on every database: filters, prefix types, scopes, both page orders; the stream's poller is
 * test/api/event-hub.test.ts.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { insertEvents } from '../outbox/events.js'
import { anEvent, eventCount } from '../../../test/support/events.js'
import {
  eventMatches,
  latestEventId,
  listEventsAfter,
  listEventsByIds,
  listEventsNewest,
  type EventFilter,
} from './event-reads.js'

const DEV = 'de000000-0000-4000-8000-000000000001'
const ARQ1 = 'a0000000-0000-4000-8000-000000000001'
const ARQ2 = 'a0000000-0000-4000-8000-000000000002'
const SAMPLE = () => [
  anEvent('accelerator.device.created', DEV),
  anEvent('accelerator.device.health_changed', DEV, null, 'ERROR'),
  anEvent('accelerator.arq.created', ARQ1, 'p1'),
  anEvent('accelerator.arq.bound', ARQ2, 'p2'),
  anEvent('accelerator.deployable.created', 'dd000000-0000-4000-8000-000000000001'),
  anEvent('accelerator.device.health_changed', DEV),
  anEvent('accelerator.agent.up', 'node1'),
]

for (const dialect of await testDialects()) {
  await test(`event reads on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      assert.equal(await latestEventId(db.db), 0)
      await insertEvents(db.db, SAMPLE())
      const all = await listEventsNewest(db.db, {}, { limit: 100 })
      assert.equal(all.length, 7)
      assert.deepEqual(
        all.map((e) => e.id),
        [...all.map((e) => e.id)].sort((a, b) => b - a),
        'newest first',
      )
      const top = all[0]!.id
      assert.equal(await latestEventId(db.db), top)
      assert.equal(all[0]!.event_type, 'accelerator.agent.up')
      assert.deepEqual(all[0]!.payload['cyborg_object.data'], { n: eventCount() })
      const types = async (f: EventFilter) =>
        (await listEventsNewest(db.db, f, { limit: 100 })).map((e) => e.event_type)
      assert.deepEqual(
        await types({ resourceUuid: DEV, eventType: 'accelerator.device.health_changed' }),
        ['accelerator.device.health_changed', 'accelerator.device.health_changed'],
      )
      assert.deepEqual(await types({ eventType: 'accelerator.arq.' }), [
        'accelerator.arq.bound',
        'accelerator.arq.created',
      ])
      // A prefix is exact text: `_` is no wildcard, case counts (SQLite's LIKE would not).
      assert.deepEqual(await types({ eventType: 'accelerator.device_' }), [])
      assert.deepEqual(await types({ eventType: 'ACCELERATOR.arq.' }), [])
      assert.deepEqual(await types({ priority: 'ERROR' }), ['accelerator.device.health_changed'])
      assert.deepEqual(await types({ resourceType: 'agent' }), ['accelerator.agent.up'])
      assert.deepEqual(await types({ projectId: 'p2' }), ['accelerator.arq.bound'])
      // Scopes: a project's own events; the hardware's too when it may read devices.
      assert.deepEqual(await types({ scope: { projectId: 'p1', hardware: false } }), [
        'accelerator.arq.created',
      ])
      const p1hw = await types({ scope: { projectId: 'p1', hardware: true } })
      assert.equal(p1hw.length, 6)
      assert.ok(!p1hw.includes('accelerator.arq.bound'), "p2's ARQ event is not p1's")
      // Paging both ways.
      const page1 = await listEventsNewest(db.db, {}, { limit: 3 })
      const page2 = await listEventsNewest(db.db, {}, { before: page1[2]!.id, limit: 3 })
      assert.deepEqual(
        [...page1, ...page2].map((e) => e.id),
        all.slice(0, 6).map((e) => e.id),
      )
      const asc = await listEventsAfter(db.db, {}, { after: all[4]!.id, limit: 100 })
      assert.deepEqual(
        asc.map((e) => e.id),
        all
          .slice(0, 4)
          .map((e) => e.id)
          .reverse(),
      )
      assert.deepEqual(
        (await listEventsByIds(db.db, [top, top - 1, 999_999])).map((e) => e.id),
        [top - 1, top],
      )
      // The stream's in-memory test agrees with the queries.
      for (const f of [
        { eventType: 'accelerator.device.' },
        { scope: { projectId: 'p1', hardware: true } },
        { scope: { projectId: 'p2', hardware: false }, priority: 'INFO' },
      ] satisfies EventFilter[]) {
        const byQuery = (await listEventsNewest(db.db, f, { limit: 100 })).map((e) => e.id)
        assert.deepEqual(
          all.filter((e) => eventMatches(f, e)).map((e) => e.id),
          byQuery,
          JSON.stringify(f),
        )
      }
    } finally {
      await db.close()
    }
  })
}
