/**
 * Scratch: statements of a Nova cycle through the API in process, per step.
 */
import pino from 'pino'
import { createApp } from '../src/api/app.js'
import { startCountedCore, settle } from '../test/support/statement-count.js'
import { createConnection } from 'mysql2/promise'

const dialect = process.argv[2] ?? 'mysql'
const cycles = Number(process.argv[3] ?? 5)
let url = 'sqlite://'
const name = `stmts_${Date.now().toString(36)}`
if (dialect === 'mysql') {
  const c = await createConnection({ host: '127.0.0.1', user: 'root' })
  await c.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
  await c.end()
  url = `mysql://root@127.0.0.1:3306/${name}`
} else if (dialect === 'pg') {
  url = `postgresql://postgres@127.0.0.1:5432/postgres`
}
const c = await startCountedCore(url, dialect === 'drain' ? undefined : undefined)
const app = await createApp({ db: c.db.db, conductor: c.core.conductorClient, log: pino({ level: 'silent' }) })
const steps: Record<string, Map<string, number>> = {}
const take = (step: string) => {
  const m = (steps[step] ??= new Map())
  for (const [k, v] of c.tally.byText) m.set(k, (m.get(k) ?? 0) + v)
  c.tally.reset()
}
async function cycle(n: number) {
  const instance = `0b9c0d1e-0000-4000-8000-${String(n).padStart(12, '0')}`
  c.tally.reset()
  await app.inject({ method: 'GET', url: '/v2/device_profiles?name=one-fpga' })
  take('profile')
  const created = await app.inject({ method: 'POST', url: '/v2/accelerator_requests', payload: { device_profile_name: 'one-fpga' } })
  take('create')
  const arq = (created.json() as { arqs: { uuid: string }[] }).arqs[0]!.uuid
  const b = await app.inject({
    method: 'PATCH',
    url: '/v2/accelerator_requests',
    payload: { [arq]: [
      { path: '/hostname', op: 'add', value: 'node1' },
      { path: '/device_rp_uuid', op: 'add', value: c.rpUuid },
      { path: '/instance_uuid', op: 'add', value: instance },
    ] },
  })
  if (b.statusCode !== 202) throw new Error(`bind ${b.statusCode} ${b.body}`)
  take('bind')
  for (;;) {
    const r = await app.inject({ method: 'GET', url: `/v2/accelerator_requests?instance=${instance}&bind_state=resolved` })
    if (r.statusCode !== 423) break
    await new Promise((r) => setTimeout(r, 2))
  }
  take('resolved')
  const d = await app.inject({ method: 'DELETE', url: `/v2/accelerator_requests?instance=${instance}` })
  if (d.statusCode !== 204) throw new Error(`delete ${d.statusCode}`)
  take('delete')
  await new Promise((r) => setTimeout(r, 400))
  take('background')
  await settle(c)
  take('settle')
}
await cycle(0)
for (const k of Object.keys(steps)) delete steps[k]
for (let i = 1; i <= cycles; i++) await cycle(i)
let total = 0
let totalNoTx = 0
for (const [step, m] of Object.entries(steps)) {
  const n = [...m.values()].reduce((a, b) => a + b, 0) / cycles
  const tx = [...m].filter(([k]) => /^(begin|commit|rollback|savepoint|release|start transaction)/i.test(k)).reduce((a, [, v]) => a + v, 0) / cycles
  total += n
  totalNoTx += n - tx
  console.log(`== ${step}: ${n.toFixed(2)} (without tx control ${(n - tx).toFixed(2)})`)
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1])) console.log(`  ${(v / cycles).toFixed(2)} ${k.slice(0, 230)}`)
}
console.log(`TOTAL ${total.toFixed(2)}, without tx control ${totalNoTx.toFixed(2)}`)
await app.close()
await c.stop()
if (dialect === 'mysql') {
  const cc = await createConnection({ host: '127.0.0.1', user: 'root' })
  await cc.query(`DROP DATABASE ${name}`)
  await cc.end()
}
