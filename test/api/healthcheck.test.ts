/**
 * `/healthcheck` over a real database: the database, bus and conductor checks, the 200/503/204
 * answers in oslo.middleware's formats, one read per burst of polls, and (on PostgreSQL) a database
 * that hangs: the healthcheck answers 503 in time instead of hanging with it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { sql } from 'kysely'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { BusStatus } from '../../src/bus/bus.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { CONDUCTOR_BINARY } from '../../src/db/reads/ping.js'
import { updateHeartbeat } from '../../src/db/service-rows.js'
import { formatTimestamp } from '../../src/domain/time.js'
import { throwingConductor } from '../support/api-app.js'
import { testDialects, type TestDatabase } from '../support/db.js'

const DOWN_MS = 60_000
const [sqlite, postgres] = (await testDialects()).filter((d) => d.skip === undefined)
type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

interface Rig {
  app: FastifyInstance
  db: TestDatabase
  /** SELECTs the app sent so far. */
  selects(): number
  advance(ms: number): void
  /** A conductor heartbeat at the rig's clock, `agoMs` in the past. */
  beat(host: string, agoMs?: number): Promise<void>
  close(): Promise<void>
}

async function rig(
  options: { db?: TestDatabase; bus?: { status?(): BusStatus }; timeoutMs?: number } = {},
): Promise<Rig> {
  const db = options.db ?? (await sqlite!.create())
  let clock = Date.now()
  let selects = 0
  const counted = db.db.withPlugin({
    transformQuery: (args) => {
      if (args.node.kind === 'SelectQueryNode') selects += 1
      return args.node
    },
    transformResult: async (args) => args.result,
  })
  const app = await createApp(
    {
      db: counted,
      conductor: throwingConductor(),
      log: pino({ level: 'silent' }),
      bus: options.bus,
    },
    {
      serviceDownAfterMs: DOWN_MS,
      healthcheck: { now: () => clock, cacheMs: 1000, timeoutMs: options.timeoutMs ?? 2000 },
    },
  )
  return {
    app,
    db,
    selects: () => selects,
    advance: (ms) => void (clock += ms),
    beat: async (host, agoMs = 0) => {
      const at = formatTimestamp(new Date(clock - agoMs))
      await updateHeartbeat(db.db, { host, binary: CONDUCTOR_BINARY, version: '1' }, at)
    },
    async close() {
      await app.close()
      await db.close()
    },
  }
}

const get = (app: FastifyInstance, url = '/healthcheck', accept?: string) =>
  app.inject({ url, headers: accept === undefined ? {} : { accept } })
const detailed = async (app: FastifyInstance) => {
  const res = await get(app, '/healthcheck?detailed', 'application/json')
  const body = res.json() as Json
  const byClass = Object.fromEntries((body.reasons as Json[]).map((r) => [r.class, r])) as Record<
    string,
    Json
  >
  return { status: res.statusCode, body, byClass }
}

void describe('/healthcheck', () => {
  let r: Rig
  before(async () => {
    r = await rig({ bus: createInProcessBus() })
  })
  after(() => r?.close())

  void it('right after start, without any conductor yet: 200 OK (the start-up grace)', async () => {
    const res = await get(r.app)
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, 'OK')
    assert.match(String(res.headers['content-type']), /^text\/plain/)
    assert.equal(res.headers['vary'], 'Accept')
    const { status, body, byClass } = await detailed(r.app)
    assert.equal(status, 200)
    assert.equal(body.detailed, true)
    assert.match(body.now, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/)
    assert.deepEqual(Object.keys(byClass), ['DatabaseCheck', 'MessageBusCheck', 'ConductorCheck'])
    assert.match(byClass.DatabaseCheck!.details, /^answered in \d+ ms$/)
    assert.deepEqual(byClass.MessageBusCheck, {
      reason: 'OK',
      details: 'in-process',
      class: 'MessageBusCheck',
    })
    assert.equal(byClass.ConductorCheck!.reason, 'OK')
    assert.match(
      byClass.ConductorCheck!.details,
      /^no conductor beat within 60 s .*no conductor ever beat.*not a failure for 60 s more/,
    )
    const json = await get(r.app, '/healthcheck', 'application/json')
    assert.deepEqual(json.json(), { detailed: false, reasons: ['OK'] })
    const head = await r.app.inject({ method: 'HEAD', url: '/healthcheck' })
    assert.equal(head.statusCode, 204)
    assert.equal(head.body, '')
  })

  void it('past the grace with no conductor up: 503 naming it; a beat makes it 200 again', async () => {
    r.advance(DOWN_MS)
    const res = await get(r.app)
    assert.equal(res.statusCode, 503)
    assert.equal(res.body, 'no conductor up')
    assert.deepEqual((await get(r.app, '/healthcheck', 'application/json')).json(), {
      detailed: false,
      reasons: ['no conductor up'],
    })
    assert.equal((await r.app.inject({ method: 'HEAD', url: '/healthcheck' })).statusCode, 503)

    await r.beat('c1', DOWN_MS + 5000) // beat too long ago: still down
    r.advance(1000)
    const stale = await detailed(r.app)
    assert.equal(stale.status, 503)
    assert.match(
      stale.byClass.ConductorCheck!.details,
      /^none of 1 conductor\(s\) beat within 60 s \(\[DEFAULT\] service_down_time\); the newest beat was 66 s ago$/,
    )

    await r.beat('c2', 3000)
    r.advance(1000)
    const up = await detailed(r.app)
    assert.equal(up.status, 200)
    assert.match(
      up.byClass.ConductorCheck!.details,
      /^1 of 2 conductor\(s\) beat within 60 s .*; the newest beat was 4 s ago$/,
    )
    assert.equal((await get(r.app)).body, 'OK')
  })

  void it('a burst of polls costs one database read per cache period', async () => {
    r.advance(1000)
    const before = r.selects()
    const answers = await Promise.all(Array.from({ length: 40 }, () => get(r.app)))
    assert.ok(answers.every((a) => a.statusCode === 200))
    assert.equal(r.selects() - before, 1)
    await get(r.app, '/healthcheck?detailed', 'application/json')
    assert.equal(r.selects() - before, 1)
    r.advance(1000)
    await get(r.app)
    assert.equal(r.selects() - before, 2)
  })
})

void describe('/healthcheck when something is down', () => {
  void it('the bus: 503 while it reconnects, and once it is closed', async () => {
    let status: BusStatus = {
      state: 'connecting',
      detail: 'connection lost 3 s ago (x); reconnecting',
    }
    const t = await rig({ bus: { status: () => status } })
    try {
      const res = await get(t.app)
      assert.equal(res.statusCode, 503)
      assert.equal(res.body, 'message bus disconnected')
      const { byClass } = await detailed(t.app)
      assert.equal(byClass.MessageBusCheck!.details, status.detail)
      status = { state: 'up', detail: 'connected to rabbit://u:***@h:5672/' }
      assert.equal((await get(t.app)).statusCode, 200)
      status = { state: 'closed', detail: 'closed' }
      assert.equal((await get(t.app)).body, 'message bus closed')
    } finally {
      await t.close()
    }
  })

  void it('the database: 503 with the database and the conductors’ state unknown', async () => {
    const t = await rig()
    try {
      await t.db.close()
      const res = await get(t.app)
      assert.equal(res.statusCode, 503)
      assert.equal(res.body, 'database unavailable\nconductor state unknown')
      t.advance(1000)
      const { status, byClass } = await detailed(t.app)
      assert.equal(status, 503)
      assert.equal(byClass.DatabaseCheck!.reason, 'database unavailable')
      assert.notEqual(byClass.DatabaseCheck!.details, '')
      assert.equal(byClass.MessageBusCheck!.reason, 'OK') // no bus given: not checked
    } finally {
      await t.app.close()
    }
  })

  void it(
    'a database that hangs: 503 within the time limit, and no second read piles up behind it',
    { skip: postgres === undefined ? 'PostgreSQL is not available' : false },
    async () => {
      const db = await postgres!.create()
      const t = await rig({ db, timeoutMs: 300 })
      const lock = await db.db.startTransaction().execute()
      try {
        await sql`lock table services in access exclusive mode`.execute(lock)
        const started = Date.now()
        const res = await get(t.app)
        assert.equal(res.statusCode, 503)
        assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`)
        assert.equal(res.body, 'database unavailable\nconductor state unknown')
        t.advance(2000)
        const { byClass } = await detailed(t.app)
        assert.match(
          byClass.DatabaseCheck!.details,
          /^no answer within 300 ms \(the read has been waiting \d+ s\)$/,
        )
        assert.equal(t.selects(), 1)
      } finally {
        await lock.rollback().execute()
      }
      t.advance(1000)
      await new Promise((resolve) => setTimeout(resolve, 100))
      assert.equal((await get(t.app)).statusCode, 200)
      await t.close()
    },
  )
})
