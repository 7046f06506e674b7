/**
 * `cyborg db check`'s Placement drift against a real Placement: none after a sync; a trait removed
 * and an inventory changed behind the conductor's back are each named; a provider deleted is named;
 * a Placement that does not answer is one `placement_unreachable` finding.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createPlacementClient } from '../../src/openstack/placement.js'
import type { Core } from '../../src/main/core.js'
import { placementDrift } from '../../src/main/commands/db-check-command.js'
import type { TestDatabase } from '../support/db.js'
import { startFakeHostCore } from '../support/fake-host-core.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = await placementSkip()

void describe('db check: Placement drift', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core
  before(async () => {
    placement = await startPlacement()
    ;({ db, core } = await startFakeHostCore({
      host: 'drift-1',
      placement: { client: placement.client, createRootProvider: true },
    }))
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('finds nothing after a sync, then names each drift', async () => {
    assert.deepEqual(await placementDrift(db, placement.client), [])
    const { rp_uuid: rp } = await db.db
      .selectFrom('deployables')
      .select('rp_uuid')
      .executeTakeFirstOrThrow()
    const p = (await placement.client.getProvider(rp!))!
    const g = await placement.client.setTraits(rp!, p.generation, ['OWNER_CYBORG'])
    await placement.client.setInventory(rp!, g, {
      FPGA: { total: 16, reserved: 3, max_unit: 16 },
    })
    const found = (await placementDrift(db, placement.client)).map((f) => f.message)
    assert.equal(found.length, 2, found.join('\n'))
    assert.match(
      found[0]!,
      /^deployable drift_1_FakeDevice: provider [0-9a-f-]{36} holds FPGA total 16 reserved 3; the database says total 16 reserved 0$/,
    )
    assert.match(
      found[1]!,
      /has traits OWNER_CYBORG; the database says CUSTOM_FAKE_DEVICE, OWNER_CYBORG$/,
    )
    assert.equal(await placement.client.deleteProvider(rp!), 'deleted')
    assert.deepEqual(await placementDrift(db, placement.client), [
      {
        kind: 'placement_drift',
        message: `deployable drift_1_FakeDevice: provider ${rp} is not in Placement`,
      },
    ])
  })

  void it('a Placement that does not answer is one finding', async () => {
    const down = createPlacementClient({
      endpoint: 'http://127.0.0.1:1',
      token: 'x',
      timeoutMs: 2000,
    })
    const found = await placementDrift(db, down)
    assert.deepEqual(
      found.map((f) => f.kind),
      ['placement_unreachable'],
    )
    assert.match(found[0]!.message, /^Placement could not be read, so drift was not checked: /)
  })
})
