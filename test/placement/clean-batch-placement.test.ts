/**
 * A release of many units costs Placement one inventory write to show them reserved and one to
 * offer them again, not two per unit (issue 28; docs/cleaning.md), on real Placement: eight units
 * of one instance are released at once on one host (the fake driver, its clean slower than the
 * conductor's Placement window), cleaned through one `cleanUnits` message, settled in one write,
 * and Placement ends matching the database once the cleaning hold is over. The calls are counted per release and printed (the
 * conductor allocates here, standalone: its allocation calls are counted apart).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Core } from '../../src/main/core.js'
import type { TestDatabase } from '../support/db.js'
import { startFakeHostCore } from '../support/fake-host-core.js'
import {
  countingClient,
  placementSkip,
  reservedAfterHold,
  startPlacement,
  type RunningPlacement,
} from '../support/peers/placement.js'

const skip = await placementSkip()
const HOST = 'batch-1'
/** Longer than the conductor's Placement window (50 ms): the units do show reserved meanwhile. */
const CLEAN_MS = 150
const UNITS = 8

void describe('a batched release on real Placement', { skip }, () => {
  let placement: RunningPlacement
  let counted: ReturnType<typeof countingClient>
  let db: TestDatabase
  let core: Core

  before(async () => {
    placement = await startPlacement()
    counted = countingClient(placement.url)
    ;({ db, core } = await startFakeHostCore({
      host: HOST,
      agent: {
        driverOptions: { fake: { clean_delay_ms: String(CLEAN_MS) } },
      },
      placement: { client: counted.client, createRootProvider: true },
      conductor: { reapIntervalMs: 0, cleaning: { retryIntervalMs: 600_000, sweepIntervalMs: 0 } },
    }))
    await core.conductorClient.createDeviceProfile({
      name: 'batch',
      description: null,
      groups: [{ 'resources:FPGA': String(UNITS) }],
    })
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('one inventory write to reserve the units and one to offer them again', async () => {
    const c = core.conductorClient
    const instanceUuid = randomUUID()
    const arqs = await c.createArqs({ deviceProfileName: 'batch', projectId: 'p1', maxArqs: 64 })
    assert.equal(arqs.length, UNITS)
    const bindings = Object.fromEntries(arqs.map((a) => [a.uuid, { hostname: HOST, instanceUuid }]))
    const bound = await c.bindArqs({ bindings })
    assert.ok(bound.every((b) => b.state === 'Bound'))
    await core.conductor!.cleaningIdle()

    const before = core.conductor!.stats()
    counted.calls.length = 0
    await c.deleteArqs({ instanceUuid })
    // Every unit back, without a sweep (turned off), and no Placement sync left running.
    for (let n = 0; n < 500; n++) {
      await core.conductor!.cleaningIdle()
      const left = await db.db
        .selectFrom('attach_handles')
        .select('id')
        .where('clean_state', 'is not', null)
        .execute()
      if (left.length === 0) break
      await new Promise((r) => setTimeout(r, 10))
    }
    await core.conductor!.cleaningIdle()
    const stats = core.conductor!.stats()
    // Placement keeps the units reserved for the cleaning hold (1 s by default), then its own
    // timer syncs the host again: Placement comes back to the database with nothing else happening.
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    const reserved = await reservedAfterHold(placement.client, rp)

    const inventoryWrites = counted.calls.filter(
      (call) => /^PUT .*\/inventories /.test(call) || call.startsWith('POST /reshaper'),
    )
    // A write after the allocations changed the provider's generation meets a 409 first, re-reads
    // the generation and writes again: one conflict per sync at most, never one per unit.
    const done = inventoryWrites.filter((call) => / 2\d\d$/.test(call))
    process.stdout.write(
      `# ${UNITS} units released: ${counted.calls.length} Placement calls ` +
        `(${counted.calls.filter((x) => x.includes('/allocations/')).length} for allocations), ` +
        `${inventoryWrites.length} inventory writes (${done.length} done); ` +
        `${stats.cleaning!.asks - before.cleaning!.asks} clean messages; ` +
        `${stats.cleaning!.settleWrites - before.cleaning!.settleWrites} settle writes\n`,
    )
    const calls = counted.calls.join(', ')
    assert.ok(
      done.length <= 2,
      `two inventory writes for ${UNITS} units, not two per unit: ${calls}`,
    )
    assert.ok(inventoryWrites.length <= 2 * done.length, `at most one conflict per write: ${calls}`)
    // One cleanUnits carried every unit: a unit the agent answered CLEAN_RUNNING (still cleaning
    // when the others were done, on a loaded machine) is asked again alone, adding 1 to both.
    const asks = stats.cleaning!.asks - before.cleaning!.asks
    const askedUnits = stats.cleaning!.askedUnits - before.cleaning!.askedUnits
    assert.equal(askedUnits - asks, UNITS - 1, 'one message carried all the units')
    const settleWrites = stats.cleaning!.settleWrites - before.cleaning!.settleWrites
    assert.ok(settleWrites <= asks, 'at most one settle write per answer')
    assert.equal(stats.cleaning!.settled - before.cleaning!.settled, UNITS)

    // Placement matches the database: nothing reserved, nothing allocated.
    assert.equal(reserved, 0)
    assert.equal((await placement.client.getUsages(rp))?.FPGA ?? 0, 0)
  })
})
