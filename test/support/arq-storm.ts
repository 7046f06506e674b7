/**
 * A bind storm over the HTTP API for the crash tests: create one ARQ per VM, PATCH them all at once
 * (Nova's shape: hostname, device_rp_uuid, instance_uuid), and read back from the database what
 * a crash must not break: every request still there, none left BindStarted, and every handle in
 * use held by exactly one Bound request.
 */
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/core/schema.js'
import { STORM_HOST, STORM_PROFILE } from './storm-inventory.js'

/** What one PATCH of the storm got: an HTTP status, or no answer at all (the server died). */
export type Outcome = number | 'network error'

/** The providers of the storm host's deployables, as Nova would pick them. */
export async function stormProviders(apiUrl: string): Promise<string[]> {
  const res = await fetch(`${apiUrl}/v2/deployables`)
  assert.equal(res.status, 200, await res.clone().text())
  const { deployables } = (await res.json()) as { deployables: { name: string; rp_uuid: string }[] }
  return deployables.filter((d) => d.name.startsWith(`${STORM_HOST}_`)).map((d) => d.rp_uuid)
}

/** One ARQ per VM from the storm profile (one FPGA each), created one after the other. */
export async function createStormArqs(apiUrl: string, vms: number): Promise<string[]> {
  const uuids: string[] = []
  for (let i = 0; i < vms; i++) {
    const res = await fetch(`${apiUrl}/v2/accelerator_requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_profile_name: STORM_PROFILE }),
    })
    assert.equal(res.status, 201, await res.clone().text())
    uuids.push(...((await res.json()) as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid))
  }
  return uuids
}

/** One PATCH per VM, all at once, spread over the providers; resolves when every one has an outcome. */
export function bindStorm(
  apiUrl: string,
  uuids: string[],
  providers: string[],
): Promise<Outcome[]> {
  return Promise.all(
    uuids.map((uuid, i) =>
      fetch(`${apiUrl}/v2/accelerator_requests`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          [uuid]: [
            { path: '/hostname', op: 'add', value: STORM_HOST },
            { path: '/device_rp_uuid', op: 'add', value: providers[i % providers.length] },
            {
              path: '/instance_uuid',
              op: 'add',
              value: `c0de0000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            },
          ],
        }),
      }).then(
        async (res) => {
          await res.arrayBuffer().catch(() => null) // the body may be cut by the kill; the status stands
          return res.status
        },
        (): Outcome => 'network error',
      ),
    ),
  )
}

const binding = (db: Kysely<Database>) =>
  db.selectFrom('accelerator_requests').select('uuid').where('state', '=', 'BindStarted').execute()

/** The requests in BindStarted right now. */
export async function bindingNow(db: Kysely<Database>): Promise<string[]> {
  return (await binding(db)).map((r) => r.uuid)
}

/**
 * Resolves once the binds are well under way: some request is Bound while others are still
 * BindStarted (or the storm is over), so that a kill then lands in the middle of the binds, with
 * handles both held by Bound requests and claimed by binds that will never finish.
 */
export async function bindsUnderWay(
  db: Kysely<Database>,
  storm: Promise<unknown>,
  timeoutMs = 20_000,
): Promise<void> {
  let over = false
  void storm.finally(() => (over = true))
  const deadline = Date.now() + timeoutMs
  while (!over && Date.now() < deadline) {
    const states = await db
      .selectFrom('accelerator_requests')
      .select('state')
      .where('state', 'in', ['BindStarted', 'Bound'])
      .execute()
    if (states.some((r) => r.state === 'Bound') && states.some((r) => r.state === 'BindStarted'))
      return
    await new Promise((r) => setTimeout(r, 2))
  }
}

/** One line for the test's diagnostics: the outcomes of the storm at the kill. */
export function tally(outcomes: Outcome[], leftBinding: number): string {
  const count = (o: Outcome) => outcomes.filter((x) => x === o).length
  return `at the kill: ${count(202)} answered 202, ${count(503)} 503, ${count('network error')} no answer; ${leftBinding} left BindStarted`
}

/**
 * Waits (up to `deadline`, epoch ms) until no request is BindStarted, then checks the invariants:
 * no request lost, none binding, handles in use = handles of Bound requests, no handle twice,
 * only the states a crashed storm may end in, and every bind answered 202 (done before the crash,
 * with a handle to spare for each request) still Bound. Resolves with a count of the final states.
 */
export async function assertConverged(
  db: Kysely<Database>,
  uuids: string[],
  answered: string[],
  deadline: number,
): Promise<string> {
  let rows: { uuid: string; state: string; attach_handle_id: number | null }[]
  for (;;) {
    rows = await db
      .selectFrom('accelerator_requests')
      .select(['uuid', 'state', 'attach_handle_id'])
      .execute()
    if (!rows.some((r) => r.state === 'BindStarted') || Date.now() > deadline) break
    await new Promise((r) => setTimeout(r, 250))
  }
  assert.deepEqual(new Set(rows.map((r) => r.uuid)), new Set(uuids), 'no request lost')
  assert.deepEqual(
    rows.filter((r) => r.state === 'BindStarted'),
    [],
    'none left binding',
  )
  const bound = rows.filter((r) => r.state === 'Bound')
  const inUse = await db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute()
  assert.deepEqual(
    new Set(inUse.map((h) => h.id)),
    new Set(bound.map((r) => r.attach_handle_id)),
    'handles in use = handles of Bound requests',
  )
  assert.equal(new Set(bound.map((r) => r.attach_handle_id)).size, bound.length, 'no handle twice')
  assert.ok(
    rows.every((r) => ['Initial', 'Bound', 'BindFailed'].includes(r.state)),
    [...new Set(rows.map((r) => r.state))].join(','),
  )
  const lost = rows.filter((r) => answered.includes(r.uuid) && r.state !== 'Bound')
  assert.deepEqual(lost, [], 'every bind answered 202 is still Bound')
  const states = new Map<string, number>()
  for (const r of rows) states.set(r.state, (states.get(r.state) ?? 0) + 1)
  return `after the restart: ${[...states].map(([state, n]) => `${n} ${state}`).join(', ')}`
}
