/**
 * Turnover with real Placement (issue 28): Nova-style bind cycles (create an ARQ, bind it, delete it
 * by instance), several in flight, on one host whose released units are cleaned before reuse (fake
 * driver). With fewer binds in flight than units, no bind fails for want of a free unit, and every
 * released unit is back in service about as soon as its clean is done: never waiting for the
 * sweep, which this test turns off. Placement is left matching the database at the end.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Core } from '../../src/main/core.js'
import type { TestDatabase } from '../support/db.js'
import { startFakeHostCore } from '../support/fake-host-core.js'
import {
  placementSkip,
  reservedAfterHold,
  startPlacement,
  type RunningPlacement,
} from '../support/peers/placement.js'

const skip = await placementSkip()
const HOST = 'turn-1'
/** The fake driver's clean time, ms. */
const CLEAN_MS = 20
/** Binds in flight (the fake device has 16 units) and cycles each. */
const IN_FLIGHT = 6
const CYCLES = 8
/**
 * How long past its clean a released unit may stay `cleaning`: generous for a loaded 2-core
 * machine (a liveness bound, not a timing goal; bench/turnover.ts measures), and far below the
 * seconds that a clean waiting behind Placement took before the fix.
 */
const SLACK_MS = 1500

void describe('turnover with real Placement', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core

  before(async () => {
    placement = await startPlacement()
    ;({ db, core } = await startFakeHostCore({
      host: HOST,
      agent: {
        driverOptions: { fake: { clean_delay_ms: String(CLEAN_MS) } },
      },
      placement: { client: placement.client, createRootProvider: true },
      // No sweep: a unit left cleaning would stay so for the whole test.
      conductor: { reapIntervalMs: 0, cleaning: { retryIntervalMs: 600_000, sweepIntervalMs: 0 } },
    }))
    await core.conductorClient.createDeviceProfile({
      name: 'turnover',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('every released unit is back in service within its clean, and no bind fails', async () => {
    const c = core.conductorClient
    const failures: string[] = []
    const cycle = async () => {
      const instanceUuid = randomUUID()
      const [arq] = await c.createArqs({
        deviceProfileName: 'turnover',
        projectId: 'p1',
        maxArqs: 64,
      })
      const [outcome] = await c.bindArqs({
        bindings: { [arq!.uuid]: { hostname: HOST, instanceUuid } },
      })
      if (outcome!.state !== 'Bound') failures.push(`${outcome!.state}: ${outcome!.reason ?? ''}`)
      await c.deleteArqs({ instanceUuid })
    }
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = 0; i < CYCLES; i++) await cycle()
      }),
    )
    assert.equal(
      failures.length,
      0,
      `no bind fails while fewer are in flight than units: ${failures[0]}`,
    )

    // Every unit back in service, without a sweep, soon after its clean.
    const deadline = Date.now() + CLEAN_MS + SLACK_MS
    let cleaning = -1
    while (Date.now() < deadline) {
      cleaning = (
        await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('clean_state', 'is not', null)
          .execute()
      ).length
      if (cleaning === 0) break
      await new Promise((r) => setTimeout(r, 10))
    }
    assert.equal(cleaning, 0, 'no unit is left cleaning')

    // Per release: from the end of its allocation to its clean record.
    const released = await db.db
      .selectFrom('custody_records as a')
      .innerJoin('custody_records as k', 'k.allocation_uuid', 'a.uuid')
      .select(['a.released_at', 'k.cleaned_at', 'k.clean_result'])
      .where('a.kind', '=', 'allocation')
      .where('k.kind', '=', 'clean')
      .execute()
    assert.equal(released.length, IN_FLIGHT * CYCLES, 'each release has its clean record')
    const late = released
      .map((r) => Date.parse(r.cleaned_at!) - Date.parse(r.released_at!))
      .filter((ms) => ms > CLEAN_MS + SLACK_MS)
    assert.deepEqual(late, [], `time in cleaning stays under ${CLEAN_MS + SLACK_MS} ms`)
    assert.ok(released.every((r) => r.clean_result === 'ok'))

    // Placement ends matching the database: nothing reserved, nothing allocated.
    await core.conductor!.cleaningIdle()
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    assert.equal(await reservedAfterHold(placement.client, rp), 0)
    const usages = (await placement.client.getUsages(rp)) ?? {}
    assert.equal(usages.FPGA ?? 0, 0)
  })
})
