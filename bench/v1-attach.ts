/**
 * v1 attach/detach against the v2 path Nova takes, side by side on one embedded server (SQLite,
 * in-process bus; bench/storm/boot-storm-embedded.ts: 4 accelerators of 64 TEST_PCI units each):
 * - `v1`: PUT /v1/accelerators/{uuid} {instance_uuid}, then DELETE /v1/accelerators/{uuid}?instance_uuid=;
 * - `v2`: POST /v2/accelerator_requests, PATCH bind (by provider), DELETE ?instance=.
 * Each worker takes its own VM; a cycle is attach + detach. Prints one JSON document: cycles/s,
 * p50/p99 per step, and the errors seen (409s when every unit is held count apart).
 * Usage: node --import tsx bench/v1-attach.ts [--seconds 5 --levels 1,8,32]
 */
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { STORM_PROFILE } from '../test/support/storm-inventory.js'
import { startEmbedded } from './storm/boot-storm-targets.js'
import { call } from './storm/boot-storm-client.js'
import { eventLoopLag, LAG_NOT_SERVED, scrapeEventLoopLag } from './support/load.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    levels: { type: 'string', default: '1,8,32' },
  },
})
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return null
  const sorted = [...xs].sort((a, b) => a - b)
  return (
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) /
    100
  )
}

type Cycle = (
  vm: string,
  acc: { uuid: string; rp: string },
  timed: (
    step: string,
    fn: () => Promise<{ status: number; data: unknown }>,
  ) => Promise<{ status: number; data: unknown }>,
) => Promise<string | undefined>

const v1: (api: string) => Cycle = (api) => async (vm, acc, timed) => {
  const put = await timed('attach', () =>
    call('PUT', `${api}/v1/accelerators/${acc.uuid}`, { instance_uuid: vm }),
  )
  if (put.status !== 200) return `attach ${put.status}`
  const del = await timed('detach', () =>
    call('DELETE', `${api}/v1/accelerators/${acc.uuid}?instance_uuid=${vm}`),
  )
  return del.status === 204 ? undefined : `detach ${del.status}`
}

const v2: (api: string) => Cycle = (api) => async (vm, acc, timed) => {
  const created = await timed('create', () =>
    call('POST', `${api}/v2/accelerator_requests`, { device_profile_name: STORM_PROFILE }),
  )
  if (created.status !== 201) return `create ${created.status}`
  const [arq] = (created.data as { arqs: { uuid: string }[] }).arqs
  const bind = [
    { path: '/hostname', op: 'add', value: 'storm-host' },
    { path: '/device_rp_uuid', op: 'add', value: acc.rp },
    { path: '/instance_uuid', op: 'add', value: vm },
  ]
  const bound = await timed('bind', () =>
    call('PATCH', `${api}/v2/accelerator_requests`, { [arq!.uuid]: bind }),
  )
  if (bound.status !== 202) return `bind ${bound.status}`
  const del = await timed('delete', () =>
    call('DELETE', `${api}/v2/accelerator_requests?instance=${vm}`),
  )
  return del.status === 204 ? undefined : `delete ${del.status}`
}

async function run(cycle: Cycle, accs: { uuid: string; rp: string }[], concurrency: number) {
  const times: Record<string, number[]> = { cycle: [] }
  const errors: Record<string, number> = {}
  let cycles = 0
  let n = 0
  const until = performance.now() + seconds * 1000
  const timed = async (step: string, fn: () => Promise<{ status: number; data: unknown }>) => {
    const t = performance.now()
    const out = await fn()
    ;(times[step] ??= []).push(performance.now() - t)
    return out
  }
  const worker = async () => {
    while (performance.now() < until) {
      const i = n++
      const vm = `be7c0000-0000-4000-8000-${String(i).padStart(12, '0')}`
      const started = performance.now()
      const failed = await cycle(vm, accs[i % accs.length]!, timed)
      if (failed) errors[failed] = (errors[failed] ?? 0) + 1
      else {
        cycles++
        times.cycle!.push(performance.now() - started)
      }
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const elapsed = (performance.now() - t0) / 1000
  const steps = Object.fromEntries(
    Object.entries(times).map(([k, xs]) => [k, { p50: pct(xs, 50), p99: pct(xs, 99) }]),
  )
  return {
    concurrency,
    cyclesPerSec: Math.round((cycles / elapsed) * 10) / 10,
    cycles,
    steps,
    errors,
  }
}

const target = await startEmbedded()
try {
  const list = (await call('GET', `${target.url}/v2/deployables`)).data as {
    deployables: { uuid: string; rp_uuid: string }[]
  }
  const accs = list.deployables.map((d) => ({ uuid: d.uuid, rp: d.rp_uuid }))
  const results: Record<string, unknown[]> = { v1: [], v2: [] }
  await scrapeEventLoopLag(`${target.url}/metrics`) // starts the service's lag window
  const lag = eventLoopLag()
  for (const level of levels) {
    results.v1!.push(await run(v1(target.url), accs, level))
    results.v2!.push(await run(v2(target.url), accs, level))
  }
  const benchmarkProcess = lag()
  // The embedded child prints its own lag on stderr when it stops (bench/storm/boot-storm-embedded.ts).
  const service = (await scrapeEventLoopLag(`${target.url}/metrics`)) ?? LAG_NOT_SERVED
  process.stdout.write(
    JSON.stringify(
      {
        bench: 'v1-attach',
        date: new Date().toISOString(),
        cpus: cpus().length,
        node: process.version,
        seconds,
        target: 'embedded (SQLite, in-process bus)',
        results,
        eventLoopLag: { benchmarkProcess, service },
      },
      null,
      2,
    ) + '\n',
  )
} finally {
  await target.stop()
}
