/**
 * The stale-bind reaper on the stack of test/support/arq-rig.ts: a bind a dead conductor left in
 * BindStarted, and a delete a crash left in Deleting, are finished by the next reaper pass.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { reapStaleBinds } from '../../src/conductor/arq/arq-reaper.js'
import { createConductor } from '../../src/conductor/conductor.js'
import { noopLogger } from '../../src/domain/logger.js'
import { createNovaClient } from '../../src/openstack/nova.js'
import { INSTANCE, useArqRig } from '../support/arq-rig.js'

void describe('accelerator requests through the conductor: reaper (sqlite, fake agent, recording Nova)', () => {
  const rig = useArqRig()
  const { batches, create } = rig

  /** Marks the first free handle in use and returns its id, as a claim would. */
  const takeFreeHandle = async () => {
    const { id } = await rig.db.db
      .selectFrom('attach_handles')
      .select('id')
      .where('in_use', '=', 0)
      .orderBy('id')
      .executeTakeFirstOrThrow()
    await rig.db.db.updateTable('attach_handles').set({ in_use: 1 }).where('id', '=', id).execute()
    return id
  }

  void it('reaps a bind left in BindStarted past bind_timeout: BindFailed, handle freed, Nova told', async () => {
    const [arq] = await create('one-fpga')
    // What a conductor killed between its claim and the agent's answer leaves behind.
    const handle = await takeFreeHandle()
    await rig.db.db
      .updateTable('accelerator_requests')
      .set({
        state: 'BindStarted',
        attach_handle_id: handle,
        instance_uuid: INSTANCE(7),
        hostname: 'node1',
        updated_at: '2026-11-22T06:00:00.000000+00:00',
      })
      .where('uuid', '=', arq!.uuid)
      .execute()
    const committer = {
      run: <T>(fn: (trx: typeof rig.db.db) => Promise<T>) => rig.db.db.transaction().execute(fn),
    }
    const novaClient = createNovaClient({ endpoint: rig.novaUrl, token: 'admin', timeoutMs: 5000 })
    const at = (iso: string) => ({ now: () => new Date(iso) })
    const deps = { db: rig.db, committer, nova: novaClient, log: noopLogger, bindTimeoutMs: 60_000 }
    // 30 s later: still within the timeout, nothing happens.
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:00:30.000Z') }), [])
    batches.length = 0
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:01:30.000Z') }), [
      arq!.uuid,
    ])
    const row = await rig.db.db
      .selectFrom('accelerator_requests')
      .select(['state', 'attach_handle_id'])
      .where('uuid', '=', arq!.uuid)
      .executeTakeFirstOrThrow()
    assert.deepEqual(row, { state: 'BindFailed', attach_handle_id: null })
    assert.equal(
      Number(
        (
          await rig.db.db
            .selectFrom('attach_handles')
            .select('in_use')
            .where('id', '=', handle)
            .executeTakeFirstOrThrow()
        ).in_use,
      ),
      0,
    )
    assert.deepEqual(batches[0]!.events, [
      {
        name: 'accelerator-request-bound',
        server_uuid: INSTANCE(7),
        tag: arq!.uuid,
        status: 'failed',
      },
    ])
    // A second pass (another conductor) finds nothing to do.
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:02:30.000Z') }), [])
  })

  void it('finishes a delete that a crash left Deleting: row gone, handle freed', async () => {
    const [arq] = await create('one-fpga')
    const handle = await takeFreeHandle()
    await rig.db.db
      .updateTable('accelerator_requests')
      .set({
        state: 'Deleting',
        attach_handle_id: handle,
        hostname: 'node1',
        updated_at: '2026-01-01T00:00:00.000000+00:00',
      })
      .where('uuid', '=', arq!.uuid)
      .execute()
    // Another conductor with a short bind_timeout runs its reaper every 25 ms.
    const other = createConductor(
      { db: rig.db, log: noopLogger, clock: { now: () => new Date() } },
      { bindTimeoutMs: 100, reapIntervalMs: 25 },
    )
    try {
      for (let i = 0; i < 100; i++) {
        const left = await rig.db.db
          .selectFrom('accelerator_requests')
          .select('id')
          .where('uuid', '=', arq!.uuid)
          .execute()
        if (left.length === 0) break
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await other.stop()
    }
    assert.deepEqual(
      await rig.db.db
        .selectFrom('accelerator_requests')
        .select('id')
        .where('uuid', '=', arq!.uuid)
        .execute(),
      [],
    )
    assert.equal(
      Number(
        (
          await rig.db.db
            .selectFrom('attach_handles')
            .select('in_use')
            .where('id', '=', handle)
            .executeTakeFirstOrThrow()
        ).in_use,
      ),
      0,
    )
  })
})
