/**
 * bench/events.ts's boot storm on a target: per VM, GET the device profile, POST the ARQ, PATCH
 * bind, GET `?instance=&bind_state=resolved` polling 423, DELETE `?instance=`. Counts the binds
 * that ended BindFailed (a storm with any is not valid: the target ran out of units).
 */
import { STORM_HOST, STORM_PROFILE } from '../../test/support/storm-inventory.js'
import { call } from '../storm/boot-storm-client.js'
import { percentiles, round2 } from './events-sinks.js'
import type { Target } from './events-targets.js'

let vmCounter = 0

/** The boot storm: `concurrency` VMs at a time for `seconds`, each one ARQ, as Nova drives it. */
export async function storm(target: Target, concurrency: number, seconds: number) {
  const api = target.url
  const bindMs: number[] = []
  const cycleMs: number[] = []
  const bound: string[] = []
  let bindFailed = 0
  let polls = 0
  const errors: Record<string, number> = {}
  const fail = (what: string) => (errors[what] = (errors[what] ?? 0) + 1)
  const started = Date.now()
  const until = performance.now() + seconds * 1000
  const worker = async () => {
    while (performance.now() < until) {
      const n = vmCounter++
      const instance = `e7e70000-0000-4000-8000-${String(n).padStart(12, '0')}`
      const t0 = performance.now()
      const dp = await call('GET', `${api}/v2/device_profiles?name=${STORM_PROFILE}`)
      if (dp.status !== 200) {
        fail(`profile ${dp.status}`)
        continue
      }
      const created = await call('POST', `${api}/v2/accelerator_requests`, {
        device_profile_name: STORM_PROFILE,
      })
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
            { path: '/device_rp_uuid', op: 'add', value: target.rps[n % target.rps.length] },
            { path: '/instance_uuid', op: 'add', value: instance },
          ],
        ]),
      )
      const tb = performance.now()
      const bind = await call('PATCH', `${api}/v2/accelerator_requests`, patch)
      if (bind.status !== 202) {
        fail(`bind ${bind.status}`)
        continue
      }
      let resolved: { status: number; data: unknown }
      for (;;) {
        resolved = await call(
          'GET',
          `${api}/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
        )
        if (resolved.status !== 423) break
        polls++
        await new Promise((r) => setTimeout(r, 2))
      }
      bindMs.push(performance.now() - tb)
      const got = (resolved.data as { arqs?: { uuid: string; state: string }[] } | null)?.arqs ?? []
      if (resolved.status !== 200 || got.some((a) => a.state !== 'Bound'))
        fail(`resolved ${resolved.status} ${got.map((a) => a.state).join(',')}`)
      for (const a of got) if (a.state === 'Bound') bound.push(a.uuid)
      bindFailed += got.filter((a) => a.state === 'BindFailed').length
      const deleted = await call('DELETE', `${api}/v2/accelerator_requests?instance=${instance}`)
      if (deleted.status !== 204) {
        fail(`delete ${deleted.status}`)
        continue
      }
      cycleMs.push(performance.now() - t0)
    }
  }
  const t = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const wall = (performance.now() - t) / 1000
  return {
    start: started,
    end: Date.now(),
    wall,
    bound,
    figures: {
      seconds: round2(wall),
      cycles: cycleMs.length,
      binds: bound.length,
      // Binds that ended BindFailed (no free unit): a run with any is not a valid storm.
      bindFailed,
      // GETs answered 423 (bind not resolved yet) per bind: each one costs the server a request.
      pollsPerBind: bound.length ? round2(polls / bound.length) : null,
      bindsPerSecond: Math.round((bound.length / wall) * 10) / 10,
      bindMs: percentiles(bindMs),
      cycleMs: percentiles(cycleMs),
      errors,
    },
  }
}
