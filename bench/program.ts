/**
 * Program to Placement (issue 19): the time from an operator's program call to the answer, by
 * which the conductor has put the card's new function trait into Placement (a real one, Debian's
 * placement-api), with the fake programmer and images from a real Glance. Each round programs the
 * other of two images, so that every round changes the trait; the trait is read back after each
 * round (outside the timing) to check it. Side by side: the fake flash at `--delays` ms (0: the
 * path's own cost: fence, download and hash, rediscovery, Placement writes, ledger and event).
 * Reported per delay: the call's latency; the agent's image fetch (Glance resolve, download and
 * hash); and the path's own overhead per round, the latency less that fetch and the flash.
 * Usage: node --import tsx bench/program.ts [--rounds 200] [--delays 0,50]
 */
import { parseArgs } from 'node:util'
import { createInProcessBus } from '../src/bus/in-process-bus.js'
import { noopLogger } from '../src/domain/logger.js'
import { fakeFunctionId } from '../src/drivers/fake/fake-program.js'
import { startCore } from '../src/main/core.js'
import { glanceImageSource } from '../src/main/resources.js'
import { createGlanceClient } from '../src/openstack/glance.js'
import { testDialects } from '../test/support/db.js'
import { startGlance } from '../test/support/peers/glance.js'
import { startPlacement } from '../test/support/peers/placement.js'
import { eventLoopLag } from './support/load.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '200' },
    delays: { type: 'string', default: '0,50' },
  },
})
const rounds = Number(values.rounds)
const delays = values.delays.split(',').map(Number)
const HOST = 'bench-prog'

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const ms = (n: number) => Math.round(n * 10) / 10

const [glance, placement] = await Promise.all([startGlance(), startPlacement()])
const texts = ['function_id=aes\nbitstream aes\n', 'function_id=sha\nbitstream sha\n']
const images = await Promise.all(texts.map((t) => glance.upload(Buffer.from(t))))
const traitOf = (i: number) => `CUSTOM_FPGA_FUNCTION_ID_FAKE_${fakeFunctionId(texts[i]!)}`
const source = glanceImageSource(createGlanceClient({ endpoint: glance.url, timeoutMs: 10_000 }))
/** How long the last image fetch (resolve, download, hash) took on the agent. */
let fetchMs = 0
const results: Record<string, unknown>[] = []
const lag = eventLoopLag()
try {
  for (const delayMs of delays) {
    const db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    const core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: HOST,
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
        images: {
          // Timed: the download and hash are the agent's programming work, not the path's.
          fetch: async (ref, dest) => {
            const t = performance.now()
            try {
              return await source.fetch(ref, dest)
            } finally {
              fetchMs = performance.now() - t
            }
          },
        },
      },
      placement: { client: placement.client, createRootProvider: true },
    })
    try {
      await core.agent!.discoverNow()
      await core.conductorClient.updateDriver({
        hostname: HOST,
        driver: 'fake',
        options: { program_delay_ms: String(delayMs) },
      })
      const dep = await db.db
        .selectFrom('deployables')
        .select(['uuid', 'rp_uuid'])
        .executeTakeFirstOrThrow()
      const times: number[] = []
      const fetches: number[] = []
      const overheads: number[] = []
      for (let i = 0; i < rounds + 10; i++) {
        const t0 = performance.now()
        await core.conductorClient.programDeployable({
          uuid: dep.uuid,
          imageUuid: images[i % 2]!,
          userId: 'bench',
          projectId: null,
        })
        const dt = performance.now() - t0
        if (!(await placement.client.getTraits(dep.rp_uuid!)).includes(traitOf(i % 2)))
          throw new Error(`round ${i}: Placement does not have ${traitOf(i % 2)}`)
        if (i >= 10) {
          times.push(dt)
          fetches.push(fetchMs)
          overheads.push(dt - fetchMs - delayMs)
        }
      }
      for (const list of [times, fetches, overheads]) list.sort((a, b) => a - b)
      const p99 = quantile(times, 0.99)
      results.push({
        target: 'embedded-sqlite',
        programDelayMs: delayMs,
        rounds,
        p50Ms: ms(quantile(times, 0.5)),
        p90Ms: ms(quantile(times, 0.9)),
        p99Ms: ms(p99),
        maxMs: ms(times.at(-1)!),
        p99OverFlashMs: ms(p99 - delayMs),
        downloadP50Ms: ms(quantile(fetches, 0.5)),
        downloadP99Ms: ms(quantile(fetches, 0.99)),
        overheadP50Ms: ms(quantile(overheads, 0.5)),
        overheadP99Ms: ms(quantile(overheads, 0.99)),
      })
    } finally {
      await core.stop()
      await db.close()
    }
  }
} finally {
  await Promise.all([glance.stop(), placement.stop()])
}
console.log(
  JSON.stringify(
    {
      bench: 'program',
      goal: 'p99 - programming time < 100 ms',
      results,
      eventLoopLag: { benchmarkProcess: lag(), services: 'embedded: the benchmark process' },
    },
    null,
    2,
  ),
)
