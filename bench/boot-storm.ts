/**
 * A VM boot storm, as Nova drives Cyborg per VM: GET the device profile, POST the ARQs, PATCH bind
 * (with the provider Placement would have picked), GET ?instance=&bind_state=resolved (polling 423),
 * DELETE ?instance=. Runs each concurrency level against (a) `bare`, the ceiling: a bare node:http
 * server with in-memory state (bench/boot-storm-bare.ts: no framework, no database), (b) `embedded`,
 * the embedded server (bench/boot-storm-embedded.ts: SQLite, in-process bus) and (c) `multi`:
 * `cyborg api` + 1 and 2 `cyborg conductor`s on RabbitMQ + PostgreSQL. Prints one JSON document,
 * with double allocations seen (must be 0).
 * Usage: npm run bench:boot-storm [-- --seconds 5 --levels 1,2,16,64 --targets bare,embedded,multi]
 */
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { STORM_HOST, STORM_PROFILE } from '../test/support/storm-inventory.js'
import { startBare, startEmbedded, startMulti, type StormTarget } from './boot-storm-targets.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    levels: { type: 'string', default: '1,2,16,64' },
    targets: { type: 'string', default: 'bare,embedded,multi' },
  },
})
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)
const json = { 'content-type': 'application/json' }
const STEPS = ['profile', 'create', 'bind', 'resolved', 'delete', 'cycle'] as const
type Step = (typeof STEPS)[number]

async function call(
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; data: unknown }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : json,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, data: text ? (JSON.parse(text) as unknown) : null }
}

async function storm(api: string, concurrency: number, rps: string[]) {
  const times: Record<Step, number[]> = Object.fromEntries(
    STEPS.map((s) => [s, []]),
  ) as unknown as Record<Step, number[]>
  const errors: Record<string, number> = {}
  const held = new Map<string, string>() // attach handle uuid → the VM holding it
  let doubles = 0
  let cycles = 0
  let vm = 0
  const until = performance.now() + seconds * 1000
  const timed = async <T>(step: Step, fn: () => Promise<T>) => {
    const t = performance.now()
    const out = await fn()
    times[step].push(performance.now() - t)
    return out
  }
  const fail = (what: string) => {
    errors[what] = (errors[what] ?? 0) + 1
  }
  const worker = async () => {
    while (performance.now() < until) {
      const n = vm++
      const instance = `5707a000-0000-4000-8000-${String(n).padStart(12, '0')}`
      const started = performance.now()
      const dp = await timed('profile', () =>
        call('GET', `${api}/v2/device_profiles?name=${STORM_PROFILE}`),
      )
      if (dp.status !== 200) {
        fail(`profile ${dp.status}`)
        continue
      }
      const created = await timed('create', () =>
        call('POST', `${api}/v2/accelerator_requests`, { device_profile_name: STORM_PROFILE }),
      )
      if (created.status !== 201) {
        fail(`create ${created.status}`)
        continue
      }
      const arqs = (created.data as { arqs: { uuid: string }[] }).arqs
      const patch = Object.fromEntries(
        arqs.map((a) => [
          a.uuid,
          [
            { path: '/hostname', op: 'add', value: STORM_HOST },
            { path: '/device_rp_uuid', op: 'add', value: rps[n % rps.length] },
            { path: '/instance_uuid', op: 'add', value: instance },
          ],
        ]),
      )
      const bound = await timed('bind', () =>
        call('PATCH', `${api}/v2/accelerator_requests`, patch),
      )
      if (bound.status !== 202) {
        fail(`bind ${bound.status}`)
        continue
      }
      let resolved: { status: number; data: unknown }
      const t = performance.now()
      for (;;) {
        resolved = await call(
          'GET',
          `${api}/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
        )
        if (resolved.status !== 423) break
        await new Promise((r) => setTimeout(r, 2))
      }
      times.resolved.push(performance.now() - t)
      const got =
        (resolved.data as { arqs?: { state: string; attach_handle_uuid: string | null }[] } | null)
          ?.arqs ?? []
      if (resolved.status !== 200 || got.some((a) => a.state !== 'Bound'))
        fail(`resolved ${resolved.status} ${got.map((a) => a.state).join(',')}`)
      for (const a of got) {
        if (!a.attach_handle_uuid) continue
        if (held.has(a.attach_handle_uuid)) doubles++
        held.set(a.attach_handle_uuid, instance)
      }
      // Held exclusively from the bound answer until the DELETE leaves (the server may free the handle
      // as soon as it receives it): another VM seeing it inside that window is a double allocation.
      for (const a of got) if (a.attach_handle_uuid) held.delete(a.attach_handle_uuid)
      const deleted = await timed('delete', () =>
        call('DELETE', `${api}/v2/accelerator_requests?instance=${instance}`),
      )
      if (deleted.status !== 204) {
        fail(`delete ${deleted.status}`)
        continue
      }
      times.cycle.push(performance.now() - started)
      cycles++
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const wall = (performance.now() - t0) / 1000
  const pct = (xs: number[], q: number) => {
    const s = [...xs].sort((a, b) => a - b)
    return s.length
      ? Math.round(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]! * 100) / 100
      : null
  }
  return {
    concurrency,
    cycles,
    cyclesPerSecond: Math.round((cycles / wall) * 10) / 10,
    ms: Object.fromEntries(
      STEPS.map((s) => [s, { p50: pct(times[s], 0.5), p99: pct(times[s], 0.99) }]),
    ),
    errors,
    doubleAllocations: doubles,
  }
}

async function listArq1000(api: string) {
  for (let i = 0; i < 1000; i++)
    await call('POST', `${api}/v2/accelerator_requests`, { device_profile_name: STORM_PROFILE })
  const t: number[] = []
  for (let i = 0; i < 50; i++) {
    const s = performance.now()
    await call('GET', `${api}/v2/accelerator_requests`)
    t.push(performance.now() - s)
  }
  t.sort((a, b) => a - b)
  return {
    arqs: 1000,
    p50Ms: Math.round(t[25]! * 100) / 100,
    p99Ms: Math.round(t[49]! * 100) / 100,
  }
}

const results: Record<string, unknown> = {}
const run = async (name: string, start: () => Promise<StormTarget>, extra = false) => {
  const target = await start()
  try {
    const rows = []
    for (const level of levels) rows.push(await storm(target.url, level, target.rps))
    results[name] = { levels: rows, ...(extra ? { list1000: await listArq1000(target.url) } : {}) }
  } finally {
    await target.stop()
  }
}
const targets = values.targets.split(',')
if (targets.includes('bare')) await run('bare', startBare, true)
if (targets.includes('embedded')) await run('embedded', startEmbedded, true)
if (targets.includes('multi')) {
  await run('apiAnd1Conductor', () => startMulti(1))
  await run('apiAnd2Conductors', () => startMulti(2))
}
process.stdout.write(
  `${JSON.stringify({ benchmark: 'boot-storm', date: new Date().toISOString(), machine: { cpus: cpus().length, node: process.version }, settings: { seconds, levels }, results }, null, 2)}\n`,
)
