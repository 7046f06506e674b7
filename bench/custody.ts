/**
 * The custody ledger's two performance goals (issue 18; docs/custody.md), printed as JSON:
 * - `verify`: 1,000,000 sealed records generated straight into a fresh PostgreSQL database (hashed
 *   here, inserted 10,000 a statement through unnest), then verified as `cyborg custody verify`
 *   does: in-process (`verifyStoredCustody`, pages of 10,000) and as the CLI process itself.
 * - `statements`: every statement of N bind/unbind cycles through a conductor on PostgreSQL,
 *   counted by a Kysely plugin, split into the ledger's append (the goal: at most one per
 *   interval), the sealer's, and the rest (what a cycle costs without the ledger).
 *
 * Usage: npm run bench:custody [-- --records 1000000 --cycles 200 --dialect postgres]
 */
import { execFile } from 'node:child_process'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { sql, type KyselyPlugin } from 'kysely'
import { createConductor } from '../src/conductor/conductor.js'
import { verifyStoredCustody } from '../src/db/reads/custody-walk.js'
import { CustodyKind, sealCustody, type CustodyFields } from '../src/domain/custody/custody.js'
import { noopLogger } from '../src/domain/logger.js'
import { testDialects, type TestDatabase } from '../test/support/db.js'
import { BIN } from '../test/support/cli.js'
import { seedStorm, STORM_HOST, STORM_PROFILE } from '../test/support/storm-inventory.js'
import { eventLoopLag, machineFacts } from './support/load.js'

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    cycles: { type: 'string', default: '200' },
    dialect: { type: 'string', default: 'postgres' },
  },
})
const RECORDS = Number(args.records)
const CYCLES = Number(args.cycles)
const loadAtStart = loadavg()[0]!

const pad = (n: number, w = 12) => String(n).padStart(w, '0')
const ts = (n: number) =>
  new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString().replace('Z', '000+00:00')

function record(n: number): CustodyFields {
  return {
    uuid: `c0570d10-0000-4000-8000-${pad(n)}`,
    kind: CustodyKind.Allocation,
    allocationUuid: null,
    arqUuid: `c0570d11-0000-4000-8000-${pad(n)}`,
    deviceUuid: `c0570d12-0000-4000-8000-${pad(n % 4096)}`,
    deployableUuid: `c0570d13-0000-4000-8000-${pad(n % 4096)}`,
    handleUuid: `c0570d14-0000-4000-8000-${pad(n % 16384)}`,
    deviceSerial: `SN-${n % 4096}`,
    hostname: `host-${n % 512}`,
    projectId: `project-${n % 100}`,
    userId: null,
    instanceUuid: `c0570d15-0000-4000-8000-${pad(n)}`,
    allocatedVia: 'nova_v2',
    boundAt: ts(n),
    releasedAt: ts(n + 600),
    cleanMethod: null,
    cleanResult: null,
    cleanEvidenceSha256: null,
    cleanedAt: null,
    detail: null,
    createdAt: ts(n + 600),
  }
}

/** Generates and inserts `count` sealed records, 10,000 a statement. */
async function fill(db: TestDatabase, count: number) {
  const BATCH = 10_000
  let head: { seq: number; hash: string } | undefined
  for (let start = 0; start < count; start += BATCH) {
    const fields = Array.from({ length: Math.min(BATCH, count - start) }, (_, i) =>
      record(start + i),
    )
    const sealed = sealCustody(head, fields)
    head = sealed[sealed.length - 1]
    const col = <K extends keyof (typeof sealed)[number]>(k: K) => sealed.map((r) => r[k])
    await sql`insert into custody_records (seq, prev_hash, hash, uuid, kind, arq_uuid, device_uuid,
      deployable_uuid, handle_uuid, device_serial, hostname, project_id, instance_uuid,
      allocated_via, bound_at, released_at, created_at)
      select * from unnest(${col('seq')}::int[], ${col('prevHash')}::text[], ${col('hash')}::text[],
        ${col('uuid')}::text[], ${col('kind')}::text[], ${col('arqUuid')}::text[],
        ${col('deviceUuid')}::text[], ${col('deployableUuid')}::text[], ${col('handleUuid')}::text[],
        ${col('deviceSerial')}::text[], ${col('hostname')}::text[], ${col('projectId')}::text[],
        ${col('instanceUuid')}::text[], ${col('allocatedVia')}::text[], ${col('boundAt')}::text[],
        ${col('releasedAt')}::text[], ${col('createdAt')}::text[])`.execute(db.db)
  }
  await sql`analyze custody_records`.execute(db.db)
}

function runCli(url: string): Promise<{ seconds: number; stdout: string; code: number }> {
  const started = performance.now()
  return new Promise((resolve) => {
    execFile(
      BIN,
      ['custody', 'verify', '--format', 'json'],
      { env: { PATH: process.env.PATH ?? '', CYBORG_DATABASE__CONNECTION: url }, timeout: 600_000 },
      (err, stdout) =>
        resolve({
          seconds: (performance.now() - started) / 1000,
          stdout,
          code: err ? Number((err as { code?: number }).code ?? 1) : 0,
        }),
    )
  })
}

async function verifyBench() {
  const pg = (await testDialects()).find((d) => d.name === 'postgres')!
  if (pg.skip) throw new Error(`PostgreSQL: ${pg.skip}`)
  const db = await pg.create()
  try {
    const t0 = performance.now()
    await fill(db, RECORDS)
    const fillSeconds = (performance.now() - t0) / 1000
    const t1 = performance.now()
    const result = await verifyStoredCustody(db.db, { pageSize: 10_000 })
    const inProcessSeconds = (performance.now() - t1) / 1000
    const cli = await runCli(db.url)
    const cliResult = JSON.parse(cli.stdout || '{}') as {
      ok?: boolean
      records?: number
      seconds?: number
    }
    return {
      records: RECORDS,
      fillSeconds: round(fillSeconds),
      inProcess: { ok: result.ok, records: result.records, seconds: round(inProcessSeconds) },
      cli: {
        exitCode: cli.code,
        ok: cliResult.ok,
        records: cliResult.records,
        verifySeconds: round(cliResult.seconds ?? NaN),
        processSeconds: round(cli.seconds),
      },
      goalSeconds: 10,
    }
  } finally {
    await db.close()
  }
}

async function statementBench() {
  const dialect = (await testDialects()).find((d) => d.name === args.dialect)!
  if (dialect.skip) throw new Error(`${dialect.name}: ${dialect.skip}`)
  const db = await dialect.create()
  const counts = { append: 0, sealer: 0, other: 0 }
  let counting = false
  const base = db.db
  const counter: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => {
      if (counting) {
        const text = base.getExecutor().compileQuery(node, queryId).sql.toLowerCase()
        if (/^\s*insert into "?custody_records/.test(text)) counts.append++
        else if (/custody_(records|sealer)/.test(text)) counts.sealer++
        else counts.other++
      }
      return node
    },
    transformResult: ({ result }) => Promise.resolve(result),
  }
  const counted = { ...db, db: base.withPlugin(counter) }
  // The storm host's agent, as far as cleaning needs it: every released unit is cleaned at once,
  // so that each interval gets its clean record (docs/cleaning.md).
  const cleanUnit = () =>
    Promise.resolve({
      driver: 'fake',
      policy: 'auto' as const,
      method: 'fake',
      evidenceSha256: '0'.repeat(64),
      durationMs: 0,
    })
  const conductor = createConductor(
    {
      db: counted,
      log: noopLogger,
      clock: { now: () => new Date() },
      cleanAgentFor: () => ({ cleanUnit }),
    },
    { reapIntervalMs: 0, saveIntervalMs: 0, webhooks: false },
  )
  try {
    await seedStorm(conductor, 4, 64)
    const arqs = []
    for (let i = 0; i < CYCLES; i++)
      arqs.push(
        ...(await conductor.createArqs({
          deviceProfileName: STORM_PROFILE,
          projectId: 'p1',
          maxArqs: 8,
        })),
      )
    await conductor.drainEvents()
    counting = true
    const started = performance.now()
    for (const [i, arq] of arqs.entries()) {
      const instanceUuid = `c0570d16-0000-4000-8000-${pad(i)}`
      const [out] = await conductor.bindArqs({
        bindings: { [arq.uuid]: { hostname: STORM_HOST, instanceUuid } },
      })
      if (out?.state !== 'Bound') throw new Error(`bind failed: ${out?.reason ?? ''}`)
      await conductor.unbindArqs({ uuids: [arq.uuid] })
    }
    await conductor.cleaningIdle()
    await conductor.drainCustody()
    const seconds = (performance.now() - started) / 1000
    counting = false
    const per = (n: number) => round(n / arqs.length)
    return {
      dialect: dialect.name,
      cycles: arqs.length,
      perCycle: {
        withoutLedger: per(counts.other),
        ledgerAppend: per(counts.append),
        withLedger: per(counts.other + counts.append),
        sealerAmortized: per(counts.sealer),
      },
      cyclesPerSecond: round(arqs.length / seconds),
      goal: 'ledgerAppend <= 1 per record: one interval per bind/unbind cycle, and its clean',
    }
  } finally {
    await conductor.stop()
    await db.close()
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000

const lag = eventLoopLag()
const statements = await statementBench()
const verify = await verifyBench()
process.stdout.write(
  JSON.stringify(
    {
      bench: 'custody',
      machine: machineFacts(loadAtStart),
      statements,
      verify,
      eventLoopLag: {
        benchmarkProcess: lag(),
        services:
          'the conductor is embedded; custody verify runs as a child process (not measured)',
      },
    },
    null,
    2,
  ) + '\n',
)
