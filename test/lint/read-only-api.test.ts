/**
 * The API holds the database typed for reads only (src/api/types.ts's Db, src/db/core/connection.ts's
 * ReadDb): a write repository function does not accept it. The check is the typecheck of this file
 * (`npm test` runs tsc first): if a ReadDb ever fitted a write, the `@ts-expect-error` below would
 * be unused, which tsc reports as an error.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Db } from '../../src/api/types.js'
import { updateDeviceStatus } from '../../src/db/devices.js'
import { listDevices } from '../../src/db/reads/device-reads.js'
import { createArqs } from '../../src/db/arqs.js'

test("the API's database handle fits reads and no write", () => {
  const db = undefined as unknown as Db
  const read = () => listDevices(db)
  const uuid = '00000000-0000-4000-8000-000000000001'
  const arqs = { profileId: 1, specs: [], projectId: null }
  // Each directive must stay right above its call: keep these lines short (Prettier wraps long ones).
  // @ts-expect-error ReadDb has no updateTable: a write repository function refuses it.
  const write = () => updateDeviceStatus(db, uuid, 'enabled', 'now')
  // @ts-expect-error ReadDb has no insertInto either.
  const create = () => createArqs(db, arqs, { now: 'now' })
  assert.deepEqual([typeof read, typeof write, typeof create], ['function', 'function', 'function'])
})
