/**
 * The v1 attach's checks as a module function (v1-attach.ts), on SQLite: `checkAttachable` refuses
 * an accelerator whose agent is past its lease (AGENT_SILENT, naming the agent) and lets one through
 * whose agent beats, or when there are no leases.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openDatabase } from '../db/core/connection.js'
import { migrateToLatest } from '../db/core/migrate.js'
import { getAcceleratorForUpdate } from '../db/v1-attachments.js'
import { updateHeartbeat } from '../db/service-rows.js'
import { ConflictError } from '../domain/errors.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { checkAttachable } from './v1-attach.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const clock = { now: () => new Date('2026-11-25T06:02:00Z') }

await test('checkAttachable refuses a silent agent, and only with leases', async () => {
  const db = await openDatabase('sqlite://')
  try {
    await migrateToLatest(db)
    await ingestSnapshot(db.db, sampleSnapshot('h1', 1), { autoActivate: true, now: T0 })
    const { uuid } = await db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow()
    const acc = await getAcceleratorForUpdate(db.db, db.dialect, uuid, false)
    const beat = { host: 'h1', binary: 'cyborg-agent', version: '1' }
    await updateHeartbeat(db.db, beat, T0)
    await db.db.transaction().execute(async (trx) => {
      await assert.rejects(
        checkAttachable({ clock, serviceDownTimeMs: 60_000 }, trx, uuid, acc),
        (err: unknown) =>
          err instanceof ConflictError && err.code === 'AGENT_SILENT' && /h1/.test(err.message),
      )
      await checkAttachable({ clock }, trx, uuid, acc)
      await checkAttachable({ clock, serviceDownTimeMs: 600_000 }, trx, uuid, acc)
    })
  } finally {
    await db.close()
  }
})
