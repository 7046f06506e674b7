/**
 * `GET /v2/events` and `GET /v2/events/stream` (2.10) in-process over HTTP on SQLite: 404 below
 * 2.10, filters and paging, a 400 naming the bad field, who sees which events, and the stream:
 * an event written after connecting arrives, a resume from Last-Event-ID loses and repeats
 * nothing, the caller's scope holds, and the app's close ends every stream.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { insertEvents } from '../../src/db/outbox/events.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { createTestApp, throwingConductor, faultOf } from '../support/api-app.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { anEvent } from '../support/events.js'

const DEV = 'de000000-0000-4000-8000-0000000000e1'
const V = 'accelerator 2.10'

interface Ev {
  id: number
  event_type: string
  resource_uuid: string
  project_id: string | null
}

/** A token of `project` with `roles` (none: the app's noauth admin). */
const authWith = (project: string, roles: string[]): Authenticator => ({
  strategy: 'keystone',
  authenticate: () =>
    freezeContext({
      userId: 'u1',
      projectId: project,
      roles,
      isAdmin: roles.includes('admin'),
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    }),
})

/** An open stream: its messages so far, and waiting for more. */
interface Stream {
  messages: { id: number; event: string; data: Ev }[]
  next(count: number): Promise<void>
  ended: Promise<void>
  close(): void
}

function openStream(
  port: number,
  query = '',
  headers: Record<string, string> = {},
): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        port,
        host: '127.0.0.1',
        path: `/v2/events/stream${query}`,
        headers: { 'openstack-api-version': V, ...headers },
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream: ${res.statusCode}`))
          return
        }
        assert.match(String(res.headers['content-type']), /^text\/event-stream/)
        let buf = ''
        let wake: (() => void) | undefined
        const s: Stream = {
          messages: [],
          async next(count) {
            while (s.messages.length < count) await new Promise<void>((r) => (wake = r))
          },
          ended: new Promise((r) => res.on('end', r)),
          close: () => req.destroy(),
        }
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          buf += chunk
          let cut: number
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut)
            buf = buf.slice(cut + 2)
            const f: Record<string, string> = {}
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue
              const i = line.indexOf(':')
              f[line.slice(0, i)] = line.slice(i + 1).trimStart()
            }
            if (f.data !== undefined)
              s.messages.push({ id: Number(f.id), event: f.event!, data: JSON.parse(f.data) as Ev })
          }
          wake?.()
        })
        resolve(s)
      },
    )
    req.on('error', reject)
  })
}

void describe('v2 events', () => {
  let db: TestDatabase
  let admin: FastifyInstance
  const apps: FastifyInstance[] = []
  const appAs = async (project: string, roles: string[]) => {
    const app = await createApp(
      { db: db.db, conductor: throwingConductor(), log: pino({ level: 'silent' }) },
      { auth: authWith(project, roles), eventStream: { pollMs: 50 } },
    )
    apps.push(app)
    return app
  }
  const list = async (app: FastifyInstance, q = '') => {
    const res = await app.inject({ url: `/v2/events${q}`, headers: { 'openstack-api-version': V } })
    assert.equal(res.statusCode, 200, res.body)
    return (res.json() as { events: Ev[] }).events
  }

  before(async () => {
    const [sqlite] = await testDialects()
    db = await sqlite!.create()
    admin = await createApp(
      { db: db.db, conductor: throwingConductor(), log: pino({ level: 'silent' }) },
      { eventStream: { pollMs: 50 } },
    )
    apps.push(admin)
    await insertEvents(db.db, [
      anEvent('accelerator.device.created', DEV),
      anEvent('accelerator.device.health_changed', DEV, null, 'ERROR'),
      anEvent('accelerator.arq.created', 'a0000000-0000-4000-8000-0000000000e1', 'p1'),
      anEvent('accelerator.arq.created', 'a0000000-0000-4000-8000-0000000000e2', 'p2'),
      anEvent('accelerator.agent.up', 'node1'),
    ])
  })
  after(async () => {
    for (const app of apps) await app.close()
    await db.close()
  })

  void it('is a 404 naming 2.10 below it', async () => {
    for (const url of ['/v2/events', '/v2/events/stream']) {
      const res = await admin.inject({
        url,
        headers: { 'openstack-api-version': 'accelerator 2.9' },
      })
      assert.equal(res.statusCode, 404)
      assert.match(faultOf(res.body).faultstring, /needs microversion 2\.10/)
    }
  })

  void it('lists newest first, filtered, paged both ways', async () => {
    const all = await list(admin)
    assert.equal(all.length, 5)
    assert.equal(all[0]!.event_type, 'accelerator.agent.up')
    const health = await list(
      admin,
      `?resource_uuid=${DEV}&event_type=accelerator.device.health_changed`,
    )
    assert.deepEqual(
      health.map((e) => e.event_type),
      ['accelerator.device.health_changed'],
    )
    assert.equal((await list(admin, '?event_type=accelerator.arq.')).length, 2)
    assert.equal((await list(admin, '?priority=ERROR')).length, 1)
    assert.equal((await list(admin, '?resource_type=agent')).length, 1)
    assert.equal((await list(admin, '?project_id=p2')).length, 1)
    const page1 = await list(admin, '?limit=2')
    const page2 = await list(admin, `?limit=2&marker=${page1[1]!.id}`)
    assert.deepEqual(
      [...page1, ...page2].map((e) => e.id),
      all.slice(0, 4).map((e) => e.id),
    )
    const asc = await list(admin, `?since=${all[2]!.id}`)
    assert.deepEqual(
      asc.map((e) => e.id),
      [all[1]!.id, all[0]!.id],
    )
  })

  void it('answers 400 naming the bad field', async () => {
    for (const [q, field] of [
      ['?limit=1001', 'limit'],
      ['?limit=0', 'limit'],
      ['?event_type=Accelerator*', 'event_type'],
      ['?priority=WARN', 'priority'],
      ['?resource_type=host', 'resource_type'],
      ['?marker=abc', 'marker'],
      ['?since=-1', 'since'],
      ['?marker=5&since=1', 'since'],
    ] as const) {
      const res = await admin.inject({
        url: `/v2/events${q}`,
        headers: { 'openstack-api-version': V },
      })
      assert.equal(res.statusCode, 400, q)
      assert.match(faultOf(res.body).faultstring, new RegExp(`'${field}'`), q)
    }
    const res = await admin.inject({
      url: '/v2/events/stream',
      headers: { 'openstack-api-version': V, 'last-event-id': 'x1' },
    })
    assert.equal(res.statusCode, 400)
    assert.match(faultOf(res.body).faultstring, /Last-Event-ID/)
  })

  void it("shows a project's own events, and the hardware's to who may read devices", async () => {
    const reader = await appAs('p1', ['reader'])
    assert.deepEqual(
      (await list(reader)).map((e) => e.project_id),
      ['p1'],
    )
    const manager = await appAs('p1', ['manager', 'member', 'reader'])
    const seen = await list(manager)
    assert.equal(seen.length, 4)
    assert.ok(seen.every((e) => e.project_id === null || e.project_id === 'p1'))
    const res = await reader.inject({
      url: '/v2/events?project_id=p2',
      headers: { 'openstack-api-version': V },
    })
    assert.equal(res.statusCode, 403)
    assert.match(faultOf(res.body).faultstring, /project_id/)
    const none = await appAs('p1', [])
    const refused = await none.inject({
      url: '/v2/events',
      headers: { 'openstack-api-version': V },
    })
    assert.equal(refused.statusCode, 403)
    assert.match(faultOf(refused.body).faultstring, /cyborg:event:get_all/)
  })

  void it('streams what is written after connecting, resumes without loss or repeats', async () => {
    const app = await appAs('p1', ['manager', 'member', 'reader'])
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    const s = await openStream(port)
    await insertEvents(db.db, [
      anEvent('accelerator.device.health_changed', DEV),
      anEvent('accelerator.arq.bound', 'a0000000-0000-4000-8000-0000000000e2', 'p2'),
      anEvent('accelerator.arq.bound', 'a0000000-0000-4000-8000-0000000000e1', 'p1'),
    ])
    await s.next(2)
    assert.deepEqual(
      s.messages.map((m) => [m.event, m.data.project_id]),
      [
        ['accelerator.device.health_changed', null],
        ['accelerator.arq.bound', 'p1'],
      ],
      "from now on, without p2's",
    )
    assert.equal(s.messages[0]!.id, s.messages[0]!.data.id)
    const last = s.messages[0]!.id
    s.close()
    // Away: two more; back with Last-Event-ID of the first one received.
    await insertEvents(db.db, [
      anEvent('accelerator.agent.down', 'node1'),
      anEvent('accelerator.agent.up', 'node1'),
    ])
    const r = await openStream(port, '?resource_type=agent', { 'last-event-id': String(last) })
    await r.next(2)
    await insertEvents(db.db, [anEvent('accelerator.agent.down', 'node1')])
    await r.next(3)
    assert.deepEqual(
      r.messages.map((m) => m.event),
      ['accelerator.agent.down', 'accelerator.agent.up', 'accelerator.agent.down'],
    )
    const ids = r.messages.map((m) => m.id)
    assert.deepEqual(
      ids,
      [...new Set(ids)].sort((a, b) => a - b),
    )
    // `since` as the header; then the app's close ends every stream.
    const t = await openStream(port, `?since=${ids[1]}`)
    await t.next(1)
    assert.deepEqual(
      t.messages.map((m) => m.id),
      [ids[2]],
    )
    await app.close()
    await Promise.all([r.ended, t.ended])
  })

  void it('outlives the request and idle time limits, and answers HEAD without streaming', async () => {
    const app = await createApp(
      { db: db.db, conductor: throwingConductor(), log: pino({ level: 'silent' }) },
      {
        eventStream: { pollMs: 50, heartbeatMs: 200 },
        timeouts: { headersMs: 300, requestMs: 300, idleMs: 600, handlerMs: 300 },
      },
    )
    apps.push(app)
    const head = await app.inject({
      method: 'HEAD',
      url: '/v2/events/stream',
      headers: { 'openstack-api-version': V },
    })
    assert.equal(head.statusCode, 200)
    assert.match(String(head.headers['content-type']), /^text\/event-stream/)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const s = await openStream((app.server.address() as { port: number }).port)
    await new Promise((r) => setTimeout(r, 1500))
    await insertEvents(db.db, [anEvent('accelerator.agent.up', 'late-node')])
    await s.next(1)
    assert.equal(s.messages[0]!.data.resource_uuid, 'late-node')
    s.close()
  })
})

void describe('v2 events stream: a client that does not read', () => {
  void it('is dropped once its buffer is full, and the others go on', async () => {
    const t = await createTestApp({ eventStream: { pollMs: 20 } })
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (t.app.server.address() as { port: number }).port
      // A socket that never reads.
      const stuck = await new Promise<http.IncomingMessage>((resolve, reject) => {
        http
          .get(
            {
              port,
              host: '127.0.0.1',
              path: '/v2/events/stream',
              headers: { 'openstack-api-version': V },
            },
            (res) => {
              res.pause()
              resolve(res)
            },
          )
          .on('error', reject)
      })
      const reader = await openStream(port, '?resource_type=agent')
      const big = 'x'.repeat(2000)
      const flood = Array.from({ length: 12_000 }, () => {
        const e = anEvent('accelerator.device.updated', DEV)
        e.payload['cyborg_object.data'] = { big }
        return e
      })
      for (let i = 0; i < flood.length; i += 2000)
        await insertEvents(t.db.db, flood.slice(i, i + 2000))
      while (!t.logs.some((l) => String(l.msg).includes('client too slow')))
        await new Promise((r) => setTimeout(r, 50))
      // Read what it had: the stream ends short of the flood.
      let frames = 0
      stuck.setEncoding('utf8')
      stuck.on('data', (chunk: string) => (frames += chunk.split('\nid: ').length - 1))
      stuck.resume()
      await new Promise((r) => stuck.on('end', r))
      assert.ok(frames < flood.length, `${frames} of ${flood.length}`)
      // The other client still gets events.
      await insertEvents(t.db.db, [anEvent('accelerator.agent.up', 'still-here')])
      await reader.next(1)
      assert.equal(reader.messages[0]!.data.resource_uuid, 'still-here')
      reader.close()
    } finally {
      await t.close()
    }
  })
})
