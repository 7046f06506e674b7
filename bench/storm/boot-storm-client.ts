/**
 * The client side of bench/boot-storm.ts: the storm itself (what Nova does per VM), the units left
 * cleaning after a level (issue 18) and the 1,000-ARQ list.
 */
import { STORM_HOST, STORM_PROFILE } from '../../test/support/storm-inventory.js'

const json = { 'content-type': 'application/json' }
const STEPS = ['profile', 'create', 'bind', 'resolved', 'delete', 'cycle'] as const
type Step = (typeof STEPS)[number]

export async function call(
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

export async function storm(api: string, concurrency: number, rps: string[], seconds: number) {
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

export async function listArq1000(api: string) {
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

/**
 * After a level: waits (up to `waitMs`) until no storm unit is used or cleaning, by GET
 * /v2/capacity (2.6); what is left then, and how long it took. Null on a server without it (bare).
 */
export async function settled(api: string, waitMs = 10_000) {
  const t0 = performance.now()
  for (;;) {
    const res = await fetch(`${api}/v2/capacity?hostname=${STORM_HOST}&group_by=host`, {
      headers: { 'openstack-api-version': 'accelerator 2.6' },
    })
    if (res.status !== 200) return null
    const { capacity } = (await res.json()) as { capacity: { used: number; cleaning: number }[] }
    const used = capacity.reduce((n, r) => n + r.used, 0)
    const cleaning = capacity.reduce((n, r) => n + r.cleaning, 0)
    const waited = performance.now() - t0
    if ((used === 0 && cleaning === 0) || waited > waitMs)
      return { used, cleaning, waitedMs: Math.round(waited) }
    await new Promise((r) => setTimeout(r, 50))
  }
}
