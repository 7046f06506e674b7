/**
 * The statements of a Nova bind cycle, step by step (issue 28: ≤ 15 a cycle): a core (conductor,
 * agent with the fake driver, a Nova stand-in; test/support/statement-count.ts) and the API in
 * process over one fresh database, counting every statement by SQL text through Kysely's log.
 * Per cycle: GET the profile, POST an ARQ, PATCH bind, GET until resolved, DELETE by instance,
 * the unit's clean; then the event relay's and custody sealer's passes, which run only when
 * drained here (so that timers cannot move the counts). BEGIN, COMMIT and SAVEPOINT are counted
 * apart (MariaDB's USER_STATISTICS counts them as "other", not as selects or writes). Prints JSON.
 * Usage: node --import tsx bench/cycle-statements.ts [-- --dialect mysql --cycles 5]
 */
import { parseArgs } from 'node:util'
import pino from 'pino'
import { createApp } from '../src/api/app.js'
import { testDialects } from '../test/support/db.js'
import { DRAIN_ONLY, settle, startCountedCore } from '../test/support/statement-count.js'

const { values } = parseArgs({
  options: {
    dialect: { type: 'string', default: 'mysql' },
    cycles: { type: 'string', default: '5' },
  },
})
const cycles = Number(values.cycles)
const dialect = (await testDialects()).find((d) => d.name === values.dialect)
if (!dialect || dialect.skip) throw new Error(`dialect ${values.dialect}: ${dialect?.skip}`)
const fresh = await dialect.create()
const c = await startCountedCore(fresh.url, DRAIN_ONLY)
const app = await createApp({
  db: c.db.db,
  conductor: c.core.conductorClient,
  log: pino({ level: 'silent' }),
})

const TX = /^(begin|commit|rollback|savepoint|release|start transaction)/i
const steps = new Map<string, Map<string, number>>()
const take = (step: string) => {
  const m = steps.get(step) ?? new Map<string, number>()
  steps.set(step, m)
  for (const [k, v] of c.tally.byText) m.set(k, (m.get(k) ?? 0) + v)
  c.tally.reset()
}

async function cycle(n: number) {
  const instance = `0b9c0d1e-0000-4000-8000-${String(n).padStart(12, '0')}`
  c.tally.reset()
  await app.inject({ method: 'GET', url: '/v2/device_profiles?name=one-fpga' })
  take('profile')
  const created = await app.inject({
    method: 'POST',
    url: '/v2/accelerator_requests',
    payload: { device_profile_name: 'one-fpga' },
  })
  take('create')
  const arq = (created.json() as { arqs: { uuid: string }[] }).arqs[0]!.uuid
  const ops = [
    { path: '/hostname', op: 'add', value: 'node1' },
    { path: '/device_rp_uuid', op: 'add', value: c.rpUuid },
    { path: '/instance_uuid', op: 'add', value: instance },
  ]
  const bound = await app.inject({
    method: 'PATCH',
    url: '/v2/accelerator_requests',
    payload: { [arq]: ops },
  })
  if (bound.statusCode !== 202) throw new Error(`bind ${bound.statusCode} ${bound.body}`)
  take('bind')
  const poll = `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`
  while ((await app.inject({ method: 'GET', url: poll })).statusCode === 423);
  take('resolved')
  const url = `/v2/accelerator_requests?instance=${instance}`
  const deleted = await app.inject({ method: 'DELETE', url })
  if (deleted.statusCode !== 204) throw new Error(`delete ${deleted.statusCode}`)
  take('delete')
  await c.core.conductor!.cleaningIdle()
  take('clean')
  await settle(c)
  take('relay and sealer')
}

try {
  await cycle(0) // fills the caches a first cycle fills
  steps.clear()
  for (let i = 1; i <= cycles; i++) await cycle(i)
  const per = (n: number) => Math.round((n / cycles) * 100) / 100
  const out: Record<string, unknown> = {}
  const total = { statements: 0, transactionControl: 0 }
  for (const [step, m] of steps) {
    const sum = (tx: boolean) =>
      [...m].filter(([k]) => TX.test(k) === tx).reduce((a, [, v]) => a + v, 0)
    out[step] = {
      statements: per(sum(false)),
      transactionControl: per(sum(true)),
      bySql: Object.fromEntries(
        [...m]
          .filter(([k]) => !TX.test(k))
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => [k.slice(0, 160), per(v)]),
      ),
    }
    total.statements += per(sum(false))
    total.transactionControl += per(sum(true))
  }
  console.log(
    JSON.stringify(
      { bench: 'cycle-statements', dialect: dialect.name, cycles, total, steps: out },
      null,
      2,
    ),
  )
} finally {
  await app.close()
  await c.stop()
  await fresh.close()
}
