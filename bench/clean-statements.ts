/**
 * Statements, write transactions and clean messages per release (issue 28; docs/performance.md,
 * "Turnover: batched cleans"): an instance holding UNITS units of one host is deleted (Nova's
 * delete by instance: one release of all its units), the stand-in agent answers every clean at
 * once (`cleanUnits` and `cleanUnit`), and every statement of the conductor from the delete to
 * the settled cleans is counted by a Kysely plugin (as bench/custody.ts does). SAVEPOINT and
 * RELEASE statements of the group committer are not counted (they bypass plugins). Prints JSON.
 * Usage: node --import tsx bench/clean-statements.ts [-- --units 8 --rounds 5 --dialect sqlite]
 */
import { parseArgs } from 'node:util'
import type { KyselyPlugin } from 'kysely'
import { createConductor } from '../src/conductor/conductor.js'
import { noopLogger } from '../src/domain/logger.js'
import { inventoryHash } from '../src/rpc/inventory-hash.js'
import { testDialects } from '../test/support/db.js'
import { sampleDevice } from '../test/support/sample-inventory.js'
import { eventLoopLag } from './support/load.js'

const { values } = parseArgs({
  options: {
    units: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '5' },
    dialect: { type: 'string', default: 'sqlite' },
  },
})
const units = Number(values.units)
const rounds = Number(values.rounds)
const dialect = (await testDialects()).find((d) => d.name === values.dialect)
if (!dialect || dialect.skip) throw new Error(`dialect ${values.dialect}: ${dialect?.skip ?? '?'}`)
const db = await dialect.create()
const lag = eventLoopLag()
let counting = false
const byVerb: Record<string, number> = {}
const plugin: KyselyPlugin = {
  transformQuery: ({ node, queryId }) => {
    if (counting) {
      const text = db.db.getExecutor().compileQuery(node, queryId).sql.trimStart().toLowerCase()
      const verb = text.split(/\s/, 1)[0]!
      byVerb[verb] = (byVerb[verb] ?? 0) + 1
    }
    return node
  },
  transformResult: ({ result }) => Promise.resolve(result),
}
const OK = {
  driver: 'fake',
  policy: 'auto' as const,
  method: 'fake',
  evidenceSha256: '0'.repeat(64),
  durationMs: 0,
}
let messages = 0
const agent = {
  cleanUnit: async () => (messages++, OK),
  cleanUnits: async (req: { units: unknown[] }) => (
    messages++,
    { results: req.units.map(() => ({ ok: true as const, result: OK })) }
  ),
  abortClean: async () => ({ aborted: false }),
}
const conductor = createConductor(
  {
    db: { ...db, db: db.db.withPlugin(plugin) },
    log: noopLogger,
    clock: { now: () => new Date() },
    agentFor: (() => agent) as never,
  },
  {
    saveIntervalMs: 0,
    reapIntervalMs: 0,
    heartbeats: false,
    webhooks: false,
    cleaning: { retryIntervalMs: 60_000, sweepIntervalMs: 0 },
  },
)
const devices = [sampleDevice('h1', 0, { handles: units, attachType: 'TEST_PCI' })]
const hash = inventoryHash(devices)
await conductor.reportInventory({ host: 'h1', hash, devices, autoActivate: true })
const groups = [{ 'resources:PGPU': String(units) }]
await conductor.createDeviceProfile({ name: 'p', description: null, groups })
const total = { statements: 0, transactions: 0, writes: 0, messages: 0 }
for (let r = 0; r < rounds; r++) {
  const arqs = await conductor.createArqs({ deviceProfileName: 'p', projectId: 'p1', maxArqs: 64 })
  const instanceUuid = `00000000-0000-4000-8000-${String(r + 1).padStart(12, '0')}`
  const bindings = Object.fromEntries(arqs.map((a) => [a.uuid, { hostname: 'h1', instanceUuid }]))
  await conductor.bindArqs({ bindings })
  await conductor.cleaningIdle()
  const before = conductor.stats()
  messages = 0
  counting = true
  await conductor.deleteArqs({ instanceUuid })
  await conductor.cleaningIdle()
  counting = false
  const after = conductor.stats()
  total.transactions += after.batches - before.batches
  total.writes += after.ops - before.ops
  total.messages += messages
}
total.statements = Object.values(byVerb).reduce((a, b) => a + b, 0)
const perRelease = (x: number) => Math.round((x / rounds / units) * 100) / 100
await conductor.stop()
await db.close()
process.stdout.write(
  `${JSON.stringify(
    {
      bench: 'clean-statements',
      dialect: dialect.name,
      units,
      rounds,
      perRelease: {
        statements: perRelease(total.statements),
        transactions: perRelease(total.transactions),
        committerWrites: perRelease(total.writes),
        cleanMessages: perRelease(total.messages),
      },
      statementsByVerb: byVerb,
      eventLoopLag: lag(),
    },
    null,
    2,
  )}\n`,
)
