/**
 * The release fence of cleaning, watched from outside (test/multiprocess/clean-kill.test.ts): a
 * released unit is sampled in one statement at a time, and every sample must show it either still
 * cleaning (in use, no clean record of the interval) or settled (back in service with its record).
 */
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/core/schema.js'

/** One look at the released unit, in one statement (one snapshot). */
export interface Sample {
  at: number
  inUse: number
  cleanState: string | null
  attemptAt: string | null
  /** `clean` custody records of the interval the release ended. */
  cleans: number
}

/** A sample breaks the fence when the unit is free without its clean record, or cleaning with it. */
export function fenceViolation(s: Sample): string | undefined {
  if (s.cleanState !== null) {
    if (s.inUse !== 1) return `clean_state ${s.cleanState} but in_use ${s.inUse}`
    if (s.cleans !== 0) return `still ${s.cleanState} with ${s.cleans} clean record(s)`
    return undefined
  }
  if (s.cleans === 0) return `clean_state null (in_use ${s.inUse}) without a clean record`
  if (s.inUse !== 0) return 'settled but still in use before any new bind'
  return undefined
}

/** One look at unit `id`, released in the interval `allocation`. */
export async function sampleUnit(
  db: Kysely<Database>,
  id: number,
  allocation: string,
): Promise<Sample> {
  const r = await db
    .selectFrom('attach_handles as h')
    .select(['h.in_use', 'h.clean_state', 'h.clean_attempt_at'])
    .select((eb) =>
      eb
        .selectFrom('custody_records as c')
        .select((e) => e.fn.countAll().as('n'))
        .where('c.kind', '=', 'clean')
        .where('c.allocation_uuid', '=', allocation)
        .as('cleans'),
    )
    .where('h.id', '=', id)
    .executeTakeFirstOrThrow()
  return {
    at: Date.now(),
    inUse: Number(r.in_use),
    cleanState: r.clean_state,
    attemptAt: r.clean_attempt_at,
    cleans: Number(r.cleans),
  }
}

/** Polls the unit every ~100 ms until stopped; stop() resolves with every sample. */
export function watchUnit(db: Kysely<Database>, id: number, allocation: string) {
  const samples: Sample[] = []
  let on = true
  const loop = (async () => {
    while (on) {
      samples.push(await sampleUnit(db, id, allocation))
      await sleep(100)
    }
  })()
  return {
    samples,
    stop: async () => {
      on = false
      await loop
      // One more look, after whatever ended the watch (e.g. the settle seen by another poll).
      samples.push(await sampleUnit(db, id, allocation))
      return samples
    },
  }
}

/** Every sample kept the fence, and once settled the unit stayed settled. */
export function assertFence(samples: Sample[], t: { diagnostic(m: string): void }): void {
  const bad = samples.map((s) => [s, fenceViolation(s)] as const).filter(([, v]) => v)
  assert.deepEqual(
    bad.map(([s, v]) => `${new Date(s.at).toISOString()}: ${v}`),
    [],
    'the release fence held in every sample',
  )
  // Once settled it stays settled (nothing between the settle and the next bind reopens it).
  const firstFree = samples.findIndex((s) => s.cleanState === null)
  assert.ok(firstFree > 0, 'watched from cleaning to settled')
  assert.ok(samples.slice(firstFree).every((s) => s.cleanState === null))
  t.diagnostic(
    `${samples.length} samples over ${samples.at(-1)!.at - samples[0]!.at} ms, cleaning in ${firstFree}`,
  )
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
