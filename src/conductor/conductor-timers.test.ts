/**
 * The conductor's timers, as module functions (issue 29): the reaper pass (arq/arq-reaper.ts), the
 * counted lease sweep (lease-sweep.ts) and the fleet gauges' restartable timer (fleet-metrics.ts).
 * On SQLite: what each pass does and counts, and that a failure is logged, never thrown.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createGroupCommitter } from '../db/core/group-commit.js'
import { openDatabase } from '../db/core/connection.js'
import { migrateToLatest } from '../db/core/migrate.js'
import { updateHeartbeat } from '../db/service-rows.js'
import { noopLogger, type Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import { reapPass, startReaper } from './arq/arq-reaper.js'
import { leaseSweepPass, startLeaseSweep } from './lease-sweep.js'
import { createFleetGauges } from './fleet-metrics.js'

const NOW = new Date('2026-11-25T06:02:00Z')
const clock = { now: () => NOW }

/** A logger that keeps its warnings' messages. */
function warnings(): { log: Logger; seen: string[] } {
  const seen: string[] = []
  const log: Logger = {
    ...noopLogger,
    warn: (obj: object | string, msg?: unknown) =>
      void seen.push(typeof msg === 'string' ? msg : String(obj)),
    child: () => log,
  }
  return { log, seen }
}

/** Metrics that keep the counters' increments and the names of the gauges replaced. */
function recording() {
  const counted: { name: string; labels: unknown; value: number }[] = []
  const replaced: string[] = []
  const metrics: Metrics = {
    inc: (name, labels = {}, value = 1) => void counted.push({ name, labels, value }),
    observe: () => {},
    replace: (name) => void replaced.push(name),
    beforeExpose: () => {},
  }
  return { metrics, counted, replaced }
}

async function sqlite() {
  const db = await openDatabase('sqlite://')
  await migrateToLatest(db)
  return db
}

await test('reapPass finishes stale deletes before bind_timeout and survives a failure', async () => {
  const db = await sqlite()
  const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
  try {
    const cutoffs: string[] = []
    const { log, seen } = warnings()
    const deps = { db, committer, log, clock, bindTimeoutMs: 60_000 }
    await reapPass({ ...deps, finishStaleDeletes: async (c) => (cutoffs.push(c), []) })
    assert.equal(cutoffs.length, 1)
    assert.ok(cutoffs[0]!.startsWith('2026-11-25T06:01:00'), cutoffs[0])
    assert.deepEqual(seen, [])
    await reapPass({ ...deps, finishStaleDeletes: async () => ['a'] })
    assert.deepEqual(seen, ['finished deleting accelerator requests left Deleting'])
    await reapPass({
      ...deps,
      finishStaleDeletes: () => Promise.reject(new Error('boom')),
    })
    assert.equal(seen.at(-1), 'stale-bind reaper failed; next pass retries')
    const never = () => Promise.reject(new Error('a stopped reaper must not run'))
    startReaper({ ...deps, finishStaleDeletes: never }, 0)()
  } finally {
    await committer.close()
    await db.close()
  }
})

await test('leaseSweepPass counts a sweep, its fences and its failures', async () => {
  const db = await sqlite()
  const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
  const { metrics, counted } = recording()
  const { log, seen } = warnings()
  const syncPlacement = async () => {}
  try {
    const beat = { host: 'h1', binary: 'cyborg-agent', version: '1' }
    await updateHeartbeat(db.db, beat, '2026-11-25T06:00:00.000000+00:00')
    const deps = { db, committer, log, clock, syncPlacement, metrics }
    await leaseSweepPass(deps, 60_000)
    assert.deepEqual(counted[0], {
      name: 'cyborg_lease_sweeps_total',
      labels: { outcome: 'ok' },
      value: 1,
    })
    // Without leases there is no sweep at all.
    startLeaseSweep(deps, undefined, 1)()
    await db.close()
    await leaseSweepPass(deps, 60_000)
    assert.deepEqual(counted.at(-1), {
      name: 'cyborg_lease_sweeps_total',
      labels: { outcome: 'error' },
      value: 1,
    })
    assert.equal(seen.at(-1), 'lease sweep failed; next pass retries')
  } finally {
    await committer.close()
  }
})

await test('createFleetGauges counts at once, restarts only on a new period, and needs metrics', async () => {
  const db = await sqlite()
  const { metrics, replaced } = recording()
  const refreshed = () => replaced.filter((n) => n === 'cyborg_fleet_refresh_duration_seconds')
  const until = async (n: number) => {
    while (refreshed().length < n) await new Promise((r) => setImmediate(r))
  }
  const leaseCutoff = () => '2026-11-25T06:01:00.000000+00:00'
  const hour = 3_600_000
  try {
    const none = createFleetGauges({ db: db.db, log: noopLogger, leaseCutoff }, hour)
    none.reconfigure(2 * hour)
    none.stop()
    const fleet = createFleetGauges({ db: db.db, metrics, log: noopLogger, leaseCutoff }, hour)
    await until(1)
    assert.ok(replaced.includes('cyborg_devices'))
    fleet.reconfigure(hour) // the same period: the timer runs on, nothing counted again
    fleet.reconfigure(2 * hour) // a new one: counted at once, then on the new timer
    await until(2)
    fleet.stop()
    assert.equal(refreshed().length, 2)
  } finally {
    await db.close()
  }
})
