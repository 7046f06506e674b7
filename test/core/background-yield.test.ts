/**
 * Issue 27: no background work may hold the event loop. On SQLite every query is synchronous, so
 * a loop that goes from batch to batch through promises alone keeps the API, the RPCs and the
 * agent of the same process (`cyborg up`) waiting until its whole backlog is done. The event
 * relay, the custody sealer and the fleet counts each do bounded work per batch and give the event
 * loop a turn between batches: a ticker on setImmediate (which runs only when the loop gets a
 * turn) must tick between the batches of a backlog.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createCustodySealer } from '../../src/conductor/outbox/custody-sealer.js'
import { createEventRelay } from '../../src/conductor/outbox/event-relay.js'
import type { EventSink, OutboxEvent } from '../../src/conductor/outbox/event-sinks.js'
import { appendCustodyRecords } from '../../src/db/custody.js'
import { insertEvents } from '../../src/db/outbox/events.js'
import { getFleetCounts } from '../../src/db/reads/fleet-counts.js'
import { CustodyKind, type CustodyFields } from '../../src/domain/custody/custody.js'
import { agentEvent } from '../../src/domain/events.js'
import { newUuid } from '../../src/domain/ids.js'
import { noopLogger } from '../../src/domain/logger.js'
import { formatTimestamp, systemClock } from '../../src/domain/time.js'
import { testDialects } from '../support/db.js'

const NOW = formatTimestamp(new Date())

/** Counts the event loop's turns while `work` runs. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ turns: number; value: T }> {
  let turns = 0
  let on = true
  const tick = () => {
    if (!on) return
    turns++
    setImmediate(tick)
  }
  setImmediate(tick)
  try {
    return { value: await work(), turns }
  } finally {
    on = false
  }
}

const [sqlite] = await testDialects()

await test('the event relay gives the event loop a turn between batches', async () => {
  const db = await sqlite!.create()
  try {
    const events = Array.from({ length: 500 }, (_, n) =>
      agentEvent(
        'lease_lost',
        { hostname: `h${n}`, binary: 'cyborg-agent', reason: `${n}`, devices: [] },
        NOW,
      ),
    )
    await db.db.transaction().execute((trx) => insertEvents(trx, events))
    const batches: OutboxEvent[][] = []
    const sink: EventSink = {
      name: 'recorder',
      deliver: (batch) => {
        batches.push([...batch])
        return Promise.resolve()
      },
    }
    const relay = createEventRelay(
      { db, sinks: [sink], log: noopLogger, clock: systemClock },
      { batchSize: 100 },
    )
    const { turns, value } = await turnsDuring(() => relay.drain())
    await relay.stop()
    assert.equal(value, 500)
    assert.equal(batches.length, 5, 'bounded: 100 events per batch')
    assert.ok(turns >= batches.length - 1, `the loop turned between batches (${turns} turns)`)
  } finally {
    await db.close()
  }
})

await test('the custody sealer gives the event loop a turn between batches', async () => {
  const db = await sqlite!.create()
  try {
    const record = (): CustodyFields => ({
      uuid: newUuid(),
      kind: CustodyKind.Override,
      allocationUuid: null,
      arqUuid: null,
      deviceUuid: null,
      deployableUuid: null,
      handleUuid: null,
      deviceSerial: null,
      hostname: 'h1',
      projectId: null,
      userId: null,
      instanceUuid: null,
      allocatedVia: null,
      boundAt: null,
      releasedAt: null,
      cleanMethod: null,
      cleanResult: null,
      cleanEvidenceSha256: null,
      cleanedAt: null,
      detail: '{}',
      createdAt: NOW,
    })
    await appendCustodyRecords(
      db.db,
      Array.from({ length: 50 }, () => record()),
    )
    const sealer = createCustodySealer(
      { db, log: noopLogger, clock: systemClock },
      { batchSize: 10 },
    )
    const { turns, value } = await turnsDuring(() => sealer.drain())
    await sealer.stop()
    assert.equal(value, 50)
    assert.ok(turns >= 4, `the loop turned between the 5 batches (${turns} turns)`)
  } finally {
    await db.close()
  }
})

await test('the fleet counts give the event loop a turn between their queries', async () => {
  const db = await sqlite!.create()
  try {
    const { turns, value } = await turnsDuring(() => getFleetCounts(db.db, NOW))
    assert.deepEqual(value.agents, { up: 0, down: 0 })
    assert.ok(turns >= 4, `the loop turned between the 5 counts (${turns} turns)`)
  } finally {
    await db.close()
  }
})
