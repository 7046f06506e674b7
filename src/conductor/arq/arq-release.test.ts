/**
 * The release path alone (arq-release.ts), on SQLite: what each step asks of the agent and of
 * Placement, and what it leaves in the database when they fail.
 */
import { after, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createGroupCommitter, type GroupCommitter } from '../../db/core/group-commit.js'
import { createArqs, getArq, listArqs, updateArqHandle, updateArqStates } from '../../db/arqs.js'
import { claimAttachHandle, getAttachHandle } from '../../db/attach-handles.js'
import { createDeviceProfile } from '../../db/device-profiles.js'
import { listDeployables } from '../../db/reads/deployable-reads.js'
import { testDialects, type TestDatabase } from '../../../test/support/db.js'
import type { Arq } from '../../domain/arq.js'
import { noopLogger } from '../../domain/logger.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import {
  finishDeleting,
  holdsNothingOutside,
  releaseDevice,
  removeArqs,
  unbindOne,
  type ReleaseDeps,
} from './arq-release.js'

const NOW = '2026-11-25T00:00:00.000000+00:00'

/** An agent that records what it is asked, and fails when told to. */
function recordingAgent() {
  const calls: string[] = []
  let failWith: string | undefined
  const agent = {
    release: async ({ address }: { address: string }) => {
      calls.push(`release ${address}`)
      if (failWith) throw new Error(failWith)
      return { address, changed: true }
    },
    removeMdev: async ({ uuid }: { uuid: string }) => {
      calls.push(`removeMdev ${uuid}`)
      if (failWith) throw new Error(failWith)
      return { uuid, changed: true }
    },
  }
  return { calls, agentFor: () => agent, fail: (message?: string) => (failWith = message) }
}

void describe('releasing accelerator requests', () => {
  let db: TestDatabase
  let committer: GroupCommitter
  let agent: ReturnType<typeof recordingAgent>
  let deps: ReleaseDeps
  let profileId: number

  /** A request Bound on h1's first deployable, holding a claimed PCI handle. */
  const boundArq = async (): Promise<Arq> => {
    const [arq] = await createArqs(
      db.db,
      { profileId, specs: [{ groupId: 0 }], projectId: null },
      { now: NOW },
    )
    const [deployable] = await listDeployables(db.db)
    await updateArqStates(db.db, [arq!.uuid], 'BindStarted', {
      now: NOW,
      set: { hostname: 'h1', instanceUuid: '00000000-0000-4000-8000-000000000001' },
    })
    const handle = await claimAttachHandle(db.db, deployable!.id, { now: NOW })
    assert.ok(handle, 'a free handle')
    await updateArqHandle(db.db, arq!.uuid, handle, NOW)
    await updateArqStates(db.db, [arq!.uuid], 'Bound', { now: NOW })
    return getArq(db.db, arq!.uuid)
  }

  before(async () => {
    const [sqlite] = await testDialects()
    db = await sqlite!.create()
    committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
    await ingestSnapshot(db.db, sampleSnapshot('h1', 1, { handles: 8 }), {
      autoActivate: true,
      now: NOW,
    })
    const groups = [{ 'resources:PGPU': '1' }]
    profileId = (
      await createDeviceProfile(
        db.db,
        { uuid: '00000000-0000-4000-8000-0000000000d1', name: 'dp', description: null, groups },
        NOW,
      )
    ).id
  })
  after(async () => {
    await committer.close()
    await db.close()
  })
  beforeEach(() => {
    agent = recordingAgent()
    deps = { db, committer, agentFor: agent.agentFor, log: noopLogger, now: () => NOW }
  })

  void it('releaseDevice has the agent unbind a PCI handle and reports nothing wrong', async () => {
    const arq = await boundArq()
    assert.equal(await releaseDevice(deps, arq), undefined)
    assert.deepEqual(agent.calls, ['release 0000:10:00.0'])
  })

  void it("releaseDevice reports the agent's failure as the reason", async () => {
    const arq = await boundArq()
    agent.fail('vfio-pci unbind failed')
    assert.equal(await releaseDevice(deps, arq), 'vfio-pci unbind failed')
  })

  void it('holdsNothingOutside: a PCI handle with an agent holds something; without an agent nothing', async () => {
    const arq = await boundArq()
    assert.equal(await holdsNothingOutside(deps, db.db, arq), false)
    assert.equal(await holdsNothingOutside({ ...deps, agentFor: undefined }, db.db, arq), true)
  })

  void it('unbindOne frees the handle and clears the binding; a failing agent leaves it held, UnbindFailed', async () => {
    const ok = await boundArq()
    assert.deepEqual(await unbindOne(deps, ok), { uuid: ok.uuid, state: 'Unbound' })
    const after = await getArq(db.db, ok.uuid)
    assert.deepEqual([after.hostname, after.attachHandleId, after.instanceUuid], [null, null, null])
    assert.equal((await getAttachHandle(db.db, ok.attachHandleId!))?.inUse, false)

    const stuck = await boundArq()
    agent.fail('device busy')
    assert.deepEqual(await unbindOne(deps, stuck), {
      uuid: stuck.uuid,
      state: 'UnbindFailed',
      reason: 'device busy',
    })
    assert.equal((await getAttachHandle(db.db, stuck.attachHandleId!))?.inUse, true)
  })

  void it('finishDeleting deletes what was released and keeps the rest Deleting', async () => {
    const a = await boundArq()
    const b = await boundArq()
    await updateArqStates(db.db, [a.uuid, b.uuid], 'Deleting', { now: NOW })
    let n = 0
    const release = async ({ address }: { address: string }) => {
      if (n++ === 1) throw new Error('busy')
      return { address, changed: true }
    }
    const flaky = { ...deps, agentFor: () => ({ ...agent.agentFor(), release }) }
    const deleted = await finishDeleting(flaky, [
      await getArq(db.db, a.uuid),
      await getArq(db.db, b.uuid),
    ])
    assert.deepEqual(
      deleted.map((x) => x.uuid),
      [a.uuid],
    )
    assert.equal((await getArq(db.db, b.uuid)).state, 'Deleting')
    assert.equal((await getAttachHandle(db.db, a.attachHandleId!))?.inUse, false)
    assert.equal((await getAttachHandle(db.db, b.attachHandleId!))?.inUse, true)
  })

  void it('removeArqs deletes a request that holds nothing outside the database in one transaction', async () => {
    const arq = await boundArq()
    assert.deepEqual(await removeArqs({ ...deps, agentFor: undefined }, [arq]), [arq.uuid])
    assert.ok(!(await listArqs(db.db)).some((a) => a.uuid === arq.uuid))
    assert.equal((await getAttachHandle(db.db, arq.attachHandleId!))?.inUse, false)
    assert.deepEqual(agent.calls, [])
  })
})
