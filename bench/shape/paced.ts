/**
 * Bind cycles started at a steady rate (bench/soak.ts), as Nova would start them: each creates an
 * ARQ, binds it on the storm host, polls until resolved and deletes it by instance. A cycle is not
 * started while `maxInFlight` are running; the figures say what rate was reached.
 */
import { call } from '../storm/boot-storm-client.js'
import { STORM_HOST, STORM_PROFILE } from '../../test/support/storm-inventory.js'

async function cycle(api: string, rp: string, instance: string): Promise<string | null> {
  const created = await call('POST', `${api}/v2/accelerator_requests`, {
    device_profile_name: STORM_PROFILE,
  })
  if (created.status !== 201) return `create ${created.status}`
  const arqs = (created.data as { arqs: { uuid: string }[] }).arqs
  const patch = Object.fromEntries(
    arqs.map((a) => [
      a.uuid,
      [
        { path: '/hostname', op: 'add', value: STORM_HOST },
        { path: '/device_rp_uuid', op: 'add', value: rp },
        { path: '/instance_uuid', op: 'add', value: instance },
      ],
    ]),
  )
  const bound = await call('PATCH', `${api}/v2/accelerator_requests`, patch)
  let failure: string | null = bound.status === 202 ? null : `bind ${bound.status}`
  for (let i = 0; failure === null; i++) {
    const r = await call(
      'GET',
      `${api}/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
    )
    if (r.status === 200) {
      const states = ((r.data as { arqs: { state: string }[] }).arqs ?? []).map((a) => a.state)
      if (states.some((s) => s !== 'Bound')) failure = `resolved ${states.join(',')}`
      break
    }
    if (r.status !== 423 || i > 5000) failure = `resolved ${r.status}`
    await new Promise((res) => setTimeout(res, 2))
  }
  const deleted = await call('DELETE', `${api}/v2/accelerator_requests?instance=${instance}`)
  if (deleted.status !== 204) return failure ?? `delete ${deleted.status}`
  return failure
}

export async function pacedCycles(
  api: string,
  rps: string[],
  options: { rate: number; maxInFlight: number; durationMs: number },
) {
  const errors: Record<string, number> = {}
  let inFlight = 0
  let started = 0
  let done = 0
  let skipped = 0
  const running = new Set<Promise<void>>()
  const t0 = performance.now()
  const interval = 1000 / options.rate
  while (performance.now() - t0 < options.durationMs) {
    const due = t0 + started * interval + skipped * interval
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    if (inFlight >= options.maxInFlight) {
      skipped++
      continue
    }
    const n = started++
    inFlight++
    const instance = `50a70000-0000-4000-8000-${String(n).padStart(12, '0')}`
    const p = cycle(api, rps[n % rps.length]!, instance)
      .then((failure) => {
        if (failure) errors[failure] = (errors[failure] ?? 0) + 1
      })
      .catch((err: Error) => {
        errors[err.message] = (errors[err.message] ?? 0) + 1
      })
      .finally(() => {
        inFlight--
        done++
        running.delete(p)
      })
    running.add(p)
  }
  await Promise.all(running)
  const seconds = (performance.now() - t0) / 1000
  return {
    targetRate: options.rate,
    cycles: done,
    cyclesPerSecond: Math.round((done / seconds) * 10) / 10,
    notStartedForMaxInFlight: skipped,
    errors,
  }
}
