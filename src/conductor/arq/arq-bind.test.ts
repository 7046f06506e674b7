/**
 * The bind's phases as module functions (arq-bind.ts), on SQLite: a whole bind of TEST_PCI handles
 * in one commit, the checks of `lockAndCheck` (state, instance already bound), the request groups
 * of `loadSpecs`, and a request without a free handle failed by `claimHandles` while the others bind.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createGroupCommitter } from '../../db/core/group-commit.js'
import { openDatabase } from '../../db/core/connection.js'
import { migrateToLatest } from '../../db/core/migrate.js'
import { createArqs, getArq } from '../../db/arqs.js'
import { createDeviceProfile } from '../../db/device-profiles.js'
import { ConflictError } from '../../domain/errors.js'
import { noopLogger } from '../../domain/logger.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { createFpgaProgrammer } from './arq-program.js'
import { bindArqs, loadSpecs, lockAndCheck, type BindDeps } from './arq-bind.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const clock = { now: () => new Date('2026-11-25T06:00:10Z') }
const I1 = '00000000-0000-4000-8000-0000000000a1'
const I2 = '00000000-0000-4000-8000-0000000000a2'

/** One host with one GPU of `handles` TEST_PCI handles, a profile asking one PGPU, and `arqs` requests. */
async function setup(handles: number, arqs: number) {
  const db = await openDatabase('sqlite://')
  await migrateToLatest(db)
  await ingestSnapshot(db.db, sampleSnapshot('h1', 1, { handles, attachType: 'TEST_PCI' }), {
    autoActivate: true,
    now: T0,
  })
  const profile = {
    uuid: '00000000-0000-4000-8000-0000000000d1',
    name: 'dp',
    description: null,
    groups: [{ 'resources:PGPU': '1' }],
  }
  const { id: profileId } = await createDeviceProfile(db.db, profile, T0)
  const specs = Array.from({ length: arqs }, () => ({ groupId: 0 }))
  const created = await createArqs(db.db, { profileId, specs, projectId: null }, { now: T0 })
  const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
  const now = () => T0
  const deps: BindDeps = {
    db,
    committer,
    clock,
    log: noopLogger,
    now,
    program: createFpgaProgrammer({ committer, log: noopLogger, now }),
  }
  const close = async () => {
    await committer.close()
    await db.close()
  }
  return { db, deps, uuids: created.map((a) => a.uuid), profileId, close }
}

await test('a bind of TEST_PCI handles is Bound in one commit; lockAndCheck then refuses it and the instance', async () => {
  const { db, deps, uuids, profileId, close } = await setup(2, 2)
  try {
    const [a, b] = uuids as [string, string]
    const groups = await loadSpecs(db.db, [await getArq(db.db, a)])
    assert.equal(groups.names.get(profileId), 'dp')
    assert.deepEqual(groups.specFor(await getArq(db.db, a))?.groupId, 0)
    const outcomes = await bindArqs(deps, {
      bindings: { [a]: { hostname: 'h1', instanceUuid: I1 } },
    })
    assert.deepEqual(outcomes, [{ uuid: a, state: 'Bound' }])
    assert.equal((await getArq(db.db, a)).state, 'Bound')
    const check = (bindings: Record<string, { hostname: string; instanceUuid: string }>) =>
      deps.committer.run((trx) => lockAndCheck(deps, trx, bindings, undefined))
    await assert.rejects(
      check({ [a]: { hostname: 'h1', instanceUuid: I2 } }),
      (err: unknown) => err instanceof ConflictError && err.code === 'ARQ_BAD_STATE',
    )
    await assert.rejects(
      check({ [b]: { hostname: 'h1', instanceUuid: I1 } }),
      (err: unknown) => err instanceof ConflictError && err.code === 'INSTANCE_ALREADY_BOUND',
    )
    assert.equal((await getArq(db.db, b)).state, 'Initial')
  } finally {
    await close()
  }
})

await test('claimHandles fails the request that finds no free handle; the other binds', async () => {
  const { db, deps, uuids, close } = await setup(1, 2)
  try {
    const [a, b] = uuids as [string, string]
    const outcomes = await bindArqs(deps, {
      bindings: {
        [a]: { hostname: 'h1', instanceUuid: I1 },
        [b]: { hostname: 'h1', instanceUuid: I2 },
      },
    })
    const states = Object.fromEntries(outcomes.map((o) => [o.uuid, o.state]))
    assert.deepEqual(Object.values(states).sort(), ['BindFailed', 'Bound'])
    const failed = outcomes.find((o) => o.state === 'BindFailed')!
    assert.ok(failed.reason, 'a failed bind says why')
    const arq = await getArq(db.db, failed.uuid)
    assert.equal(arq.state, 'BindFailed')
    assert.equal(arq.attachHandleId, null)
  } finally {
    await close()
  }
})
