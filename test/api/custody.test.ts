/**
 * The custody ledger over HTTP and the CLI: `GET /v2/custody` and `/v2/custody/{uuid}` only from
 * 2.8, with filters and paging; a project reader sees their own project's records only; `cyborg
 * custody list|show|export` through the API; `cyborg custody verify` against the database itself
 * (PostgreSQL: a file the CLI process can open), OK, then naming an edited record.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { createCustodySealer } from '../../src/conductor/outbox/custody-sealer.js'
import { appendAllocationRecords } from '../../src/db/custody.js'
import { noopLogger } from '../../src/domain/logger.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { cyborg } from '../support/cli.js'
import { testDialects } from '../support/db.js'
import { fault, HOST, startStack, type Stack } from './stack.js'

const INSTANCE = (n: number) => `c0570d1e-0000-4000-8000-${String(n).padStart(12, '0')}`

/** A token of `project` with `roles`. */
const authWith = (project: string, roles: string[]): Authenticator => ({
  strategy: 'keystone',
  authenticate: () =>
    freezeContext({
      userId: 'u1',
      projectId: project,
      roles,
      isAdmin: false,
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    }),
})

interface Rec {
  uuid: string
  seq: number | null
  kind: string
  project_id: string | null
  instance_uuid: string | null
  device_uuid: string | null
  created_at: string
  released_at: string | null
}

void describe('v2 custody', () => {
  let s: Stack
  const apps: FastifyInstance[] = []
  const list = async (q = '', version = '2.8') => {
    const res = await s.request({ method: 'GET', url: `/v2/custody${q}`, version })
    assert.equal(res.statusCode, 200, res.body)
    return (res.json() as { custody_records: Rec[] }).custody_records
  }

  before(async () => {
    s = await startStack({ autoActivate: true, conductor: { reapIntervalMs: 0 } })
    await s.core.agent!.discoverNow()
    const c = s.core.conductorClient
    await c.createDeviceProfile({
      name: 'one',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
    // Three intervals: projects p1, p2, p1, one instance each.
    for (const [n, project] of [
      [1, 'p1'],
      [2, 'p2'],
      [3, 'p1'],
    ] as const) {
      const [arq] = await c.createArqs({ deviceProfileName: 'one', projectId: project, maxArqs: 8 })
      const [out] = await c.bindArqs({
        bindings: { [arq!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE(n) } },
      })
      assert.equal(out!.state, 'Bound', out!.reason ?? '')
      await c.unbindArqs({ uuids: [arq!.uuid] })
      // Each release is cleaned before the next (docs/cleaning.md): interval, clean, interval, …
      await s.core.conductor!.cleaningIdle()
    }
    await s.core.conductor!.drainCustody()
  })
  after(async () => {
    for (const app of apps) await app.close()
    await s?.close()
  })

  it('is there from 2.8 only', async () => {
    for (const version of [undefined, '2.7']) {
      const res = await s.request({ method: 'GET', url: '/v2/custody', version })
      assert.equal(res.statusCode, 404, String(version))
      if (version) assert.match(fault(res), /2\.8/)
    }
    const all = await list()
    assert.deepEqual(
      all.map((r) => [r.seq, r.kind, r.project_id, r.instance_uuid]),
      [
        [1, 'allocation', 'p1', INSTANCE(1)],
        [2, 'clean', 'p1', INSTANCE(1)],
        [3, 'allocation', 'p2', INSTANCE(2)],
        [4, 'clean', 'p2', INSTANCE(2)],
        [5, 'allocation', 'p1', INSTANCE(3)],
        [6, 'clean', 'p1', INSTANCE(3)],
      ],
    )
  })

  it('filters by project, instance, device, kind, time; pages; shows one', async () => {
    assert.equal((await list('?project_id=p1&kind=allocation')).length, 2)
    assert.deepEqual(
      (await list(`?instance_uuid=${INSTANCE(2)}`)).map((r) => [r.kind, r.project_id]),
      [
        ['allocation', 'p2'],
        ['clean', 'p2'],
      ],
    )
    const all = await list('?kind=allocation')
    assert.equal((await list(`?device_uuid=${all[0]!.device_uuid}`)).length, 6)
    assert.equal((await list('?since=2999-01-01')).length, 0)
    assert.equal((await list('?until=2999-01-01&kind=clean')).length, 3)
    const page = await list(`?kind=allocation&limit=1&marker=${all[0]!.uuid}`)
    assert.deepEqual(
      page.map((r) => r.uuid),
      [all[1]!.uuid],
    )
    const bad = await s.request({
      method: 'GET',
      url: '/v2/custody?since=yesterday',
      version: '2.8',
    })
    assert.equal(bad.statusCode, 400)
    assert.match(fault(bad), /since/)
    const one = await s.request({
      method: 'GET',
      url: `/v2/custody/${all[1]!.uuid}`,
      version: '2.8',
    })
    assert.equal(one.statusCode, 200)
    assert.equal((one.json() as Rec).instance_uuid, INSTANCE(2))
    const missing = await s.request({
      method: 'GET',
      url: '/v2/custody/0dd00000-0000-4000-8000-00000000beef',
      version: '2.8',
    })
    assert.equal(missing.statusCode, 404)
  })

  it('since and until are real RFC 3339 times, compared as instants; anything else is a 400 naming them (issue 27)', async () => {
    for (const [query, field] of [
      ['since=2026-13-45', 'since'],
      ['until=9999-99-99T99:99:99', 'until'],
      ['since=2026-01-01T::::', 'since'],
      ['since=2026-02-30', 'since'],
      ['until=2026-01-01T24:00:00Z', 'until'],
      ['since=2026-01-01T10:00:00', 'since'],
      ['until=2026-01-01T10:00:00%2B24:00', 'until'],
      ['since=2026-01-01&until=garbage', 'until'],
    ] as const) {
      const res = await s.request({ method: 'GET', url: `/v2/custody?${query}`, version: '2.8' })
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`)
      assert.match(fault(res), new RegExp(`'${field}'`), query)
    }
    const all = await list()
    const first = all[0]!.released_at ?? all[0]!.created_at
    // The same instant written with an offset: the record is in, one millisecond later it is out.
    const at = new Date(Date.parse(first))
    const plus2 = new Date(at.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00')
    assert.equal(
      (await list(`?until=${encodeURIComponent(plus2)}`)).some((r) => r.uuid === all[0]!.uuid),
      false,
    )
    const since = await list(`?since=${encodeURIComponent(plus2)}`)
    assert.ok(
      since.some((r) => r.uuid === all[0]!.uuid),
      `${plus2} includes the record released at ${first}`,
    )
    const later = new Date(at.getTime() + 1).toISOString()
    const until = await list(`?until=${encodeURIComponent(later)}&kind=allocation`)
    assert.ok(until.some((r) => r.uuid === all[0]!.uuid))
    assert.equal((await list('?since=2024-02-29&until=2024-03-01T00:00:00Z')).length, 0)
  })

  it("a project reader sees only their project's records", async () => {
    const app = await createApp(
      { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) },
      { auth: authWith('p2', ['reader']) },
    )
    apps.push(app)
    const get = (url: string) =>
      app.inject({
        method: 'GET',
        url,
        headers: { host: HOST, 'openstack-api-version': 'accelerator 2.8' },
      })
    const mine = await get('/v2/custody')
    assert.equal(mine.statusCode, 200, mine.body)
    const records = (mine.json() as { custody_records: Rec[] }).custody_records
    assert.deepEqual(
      records.map((r) => [r.kind, r.project_id]),
      [
        ['allocation', 'p2'],
        ['clean', 'p2'],
      ],
    )
    assert.equal((await get('/v2/custody?project_id=p1')).statusCode, 403)
    const all = await list('?kind=allocation')
    assert.equal((await get(`/v2/custody/${all[0]!.uuid}`)).statusCode, 404)
    assert.equal((await get(`/v2/custody/${all[1]!.uuid}`)).statusCode, 200)
    const none = await createApp(
      { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) },
      { auth: authWith('p2', []) },
    )
    apps.push(none)
    const denied = await none.inject({
      method: 'GET',
      url: '/v2/custody',
      headers: { host: HOST, 'openstack-api-version': 'accelerator 2.8' },
    })
    assert.equal(denied.statusCode, 403)
    assert.match(fault(denied), /cyborg:custody:get_all/)
  })

  it('cyborg custody list, show and export', async () => {
    const url = await s.app.listen({ host: '127.0.0.1', port: 0 })
    const env = { CYBORG_URL: url }
    const listed = await cyborg(['custody', 'list', '--project', 'p1'], env)
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, /Seq\s+Kind\s+Device/)
    const all = await list('?kind=allocation')
    assert.ok(listed.stdout.includes(all[0]!.uuid) && listed.stdout.includes(all[2]!.uuid))
    assert.ok(!listed.stdout.includes(all[1]!.uuid), 'p2 is not listed')
    const shown = await cyborg(['custody', 'show', all[2]!.uuid, '--format', 'json'], env)
    assert.equal(shown.code, 0, shown.stderr)
    assert.equal((JSON.parse(shown.stdout) as Rec).instance_uuid, INSTANCE(3))
    const exported = await cyborg(['custody', 'export', '--page-size', '2'], env)
    assert.equal(exported.code, 0, exported.stderr)
    const lines = exported.stdout.trimEnd().split('\n')
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as Rec).seq),
      [1, 2, 3, 4, 5, 6],
    )
  })
})

const postgres = (await testDialects()).find((d) => d.name === 'postgres')!

void describe('cyborg custody verify', { skip: postgres.skip }, () => {
  it('reports the head, then names an edited record', async () => {
    const db = await postgres.create()
    try {
      for (let n = 1; n <= 25; n++)
        await appendAllocationRecords(db.db, [
          {
            uuid: `c0570d10-0000-4000-8000-${String(n).padStart(12, '0')}`,
            arq: {
              id: n,
              uuid: `c0570d11-0000-4000-8000-${String(n).padStart(12, '0')}`,
              state: 'Bound',
              deviceProfileId: 1,
              deviceProfileGroupId: 0,
              projectId: 'p1',
              hostname: 'h1',
              deviceRpUuid: null,
              instanceUuid: INSTANCE(n),
              attachHandleId: 1,
              deployableId: null,
              createdAt: '2026-11-25T00:00:00.000000+00:00',
              updatedAt: '2026-11-25T00:00:00.000000+00:00',
              boundAt: '2026-11-25T00:00:00.000000+00:00',
              bindId: null,
            },
            via: 'standalone_v2',
            boundAt: '2026-11-25T00:00:00.000000+00:00',
            releasedAt: '2026-11-25T00:00:01.000000+00:00',
          },
        ])
      const sealer = createCustodySealer({ db, log: noopLogger, clock: { now: () => new Date() } })
      assert.equal(await sealer.drain(), 25)
      await sealer.stop()
      const env = { CYBORG_DATABASE__CONNECTION: db.url }
      const ok = await cyborg(['custody', 'verify', '--page-size', '10'], env)
      assert.equal(ok.code, 0, ok.stderr)
      assert.match(ok.stdout, /custody chain OK: 25 records from seq 1 to head seq 25 /)
      // Three parts walked side by side in worker threads: the same chain, the same head.
      const parallel = await cyborg(
        ['custody', 'verify', '--workers', '3', '--page-size', '4'],
        env,
      )
      assert.equal(parallel.code, 0, parallel.stderr)
      const head = (s: string) => /head seq 25 ([0-9a-f]{64})/.exec(s)?.[1]
      assert.equal(head(parallel.stdout), head(ok.stdout))
      assert.match(parallel.stdout, /custody chain OK: 25 records from seq 1 to head seq 25 /)
      await db.db
        .updateTable('custody_records')
        .set({ project_id: 'p2' })
        .where('seq', '=', 17)
        .execute()
      const broken = await cyborg(['custody', 'verify', '--format', 'json'], env)
      assert.equal(broken.code, 1, broken.stderr)
      const result = JSON.parse(broken.stdout) as {
        ok: boolean
        broken: { seq: number; reason: string }
      }
      assert.equal(result.ok, false)
      assert.deepEqual([result.broken.seq, result.broken.reason], [17, 'hash_mismatch'])
      // Side by side: the break (in the last part) is the same; so is a deleted seam record.
      for (const workers of ['2', '3']) {
        const r = await cyborg(['custody', 'verify', '--workers', workers, '--format', 'json'], env)
        assert.equal(r.code, 1, r.stderr)
        assert.deepEqual(JSON.parse(r.stdout).broken, result.broken)
      }
      await db.db.deleteFrom('custody_records').where('seq', '=', 9).execute()
      const gap = await cyborg(['custody', 'verify', '--workers', '3', '--format', 'json'], env)
      const single = await cyborg(['custody', 'verify', '--workers', '1', '--format', 'json'], env)
      assert.equal(gap.code, 1, gap.stderr)
      const brokenOf = (s: string) => JSON.parse(s) as { broken: unknown; records: number }
      assert.deepEqual(brokenOf(gap.stdout).broken, brokenOf(single.stdout).broken)
      assert.equal(brokenOf(gap.stdout).records, brokenOf(single.stdout).records)
      assert.match(gap.stdout, /records missing between seq 8 and seq 10/)
    } finally {
      await db.close()
    }
  })
})
