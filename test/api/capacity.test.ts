/**
 * `GET /v2/capacity` (2.6) over the in-process stack: node2's four sample devices with one handle
 * used, one device failed (fenced) and one disabled (reserved); filters, `group_by`, a 400 naming
 * each bad parameter, the microversion gate, RBAC (admin and project reader yes, no role no), and
 * `cyborg capacity` printing a plain table when piped.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { cyborg } from '../support/cli.js'
import { fault, HOST, startStack, type Stack } from './stack.js'

interface Row {
  resource_class: string | null
  hostname: string | null
  traits: string[] | null
  device_type: string | null
  total: number
  used: number
  reserved: number
  fenced: number
  cleaning: number
  free: number
}

/** A token of project p1 with `roles`; the policy alone decides. */
const authWith = (roles: string[]): Authenticator => ({
  strategy: 'keystone',
  authenticate: () =>
    freezeContext({
      userId: 'u1',
      projectId: 'p1',
      roles,
      isAdmin: false,
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    }),
})

const counts = (r: Row) => [r.total, r.used, r.reserved, r.fenced, r.cleaning, r.free]

void describe('v2 capacity', () => {
  let s: Stack
  const apps: FastifyInstance[] = []
  const get = (q = '', version = '2.6') =>
    s.request({ method: 'GET', url: `/v2/capacity${q}`, version })
  const rows = async (q: string) => {
    const res = await get(q)
    assert.equal(res.statusCode, 200, res.body)
    return (res.json() as { capacity: Row[] }).capacity
  }
  const deviceOf = async (name: string) =>
    (
      await s.db.db
        .selectFrom('deployables as p')
        .innerJoin('devices as d', 'd.id', 'p.device_id')
        .select(['p.id', 'd.uuid'])
        .where('p.name', '=', name)
        .executeTakeFirstOrThrow()
    ).uuid

  before(async () => {
    s = await startStack()
    // node2: GPUs 0000:10 and :12, FPGAs :11 and :13, two handles each, all active.
    const gpu = await s.db.db
      .selectFrom('deployables')
      .select('id')
      .where('name', '=', 'node2_0000:10:00.0')
      .executeTakeFirstOrThrow()
    await s.db.db
      .updateTable('attach_handles')
      .set({ in_use: 1 })
      .where('id', '=', (eb) =>
        eb
          .selectFrom('attach_handles')
          .select((e) => e.fn.min('id').as('id'))
          .where('deployable_id', '=', gpu.id),
      )
      .execute()
    await s.db.db
      .updateTable('devices')
      .set({ health: 'failed', health_reason: 'ECC' })
      .where('uuid', '=', await deviceOf('node2_0000:12:00.0'))
      .execute()
    await s.core.conductorClient.setDeviceStatus({
      uuid: await deviceOf('node2_0000:13:00.0'),
      status: 'maintaining',
    })
  })
  after(async () => {
    for (const app of apps) await app.close()
    await s?.close()
  })

  void it('counts units per resource class, host and trait set', async () => {
    const res = await get('?hostname=node2')
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json() as { group_by: string | null; capacity: Row[] }
    assert.equal(body.group_by, null)
    assert.deepEqual(
      body.capacity.map((r) => [
        r.resource_class,
        r.hostname,
        r.traits,
        r.device_type,
        ...counts(r),
      ]),
      [
        ['FPGA', 'node2', ['CUSTOM_FPGA_INTEL'], null, 4, 0, 2, 0, 0, 2],
        ['PGPU', 'node2', ['CUSTOM_GPU_NVIDIA'], null, 4, 1, 0, 2, 0, 1],
      ],
    )
    const all = await rows('')
    for (const r of all) {
      assert.equal(r.total, r.used + r.reserved + r.fenced + r.cleaning + r.free)
    }
    assert.ok(all.some((r) => r.hostname === 'node1'))
  })

  void it('filters by resource class and traits, and groups', async () => {
    const fpga = await rows('?resource_class=FPGA')
    assert.deepEqual(
      fpga.map((r) => [r.hostname, r.resource_class]),
      [
        ['node1', 'FPGA'],
        ['node2', 'FPGA'],
      ],
    )
    const nvidia = await rows('?trait=CUSTOM_GPU_NVIDIA')
    assert.deepEqual(
      nvidia.map((r) => r.resource_class),
      ['PGPU'],
    )
    assert.deepEqual(await rows('?trait=CUSTOM_GPU_NVIDIA&trait=CUSTOM_FPGA_INTEL'), [])
    assert.deepEqual(await rows('?trait=CUSTOM_GPU_NVIDIA,CUSTOM_FPGA_INTEL'), [])
    const byHost = await rows('?group_by=host&hostname=node2')
    assert.deepEqual(
      byHost.map((r) => [r.hostname, r.resource_class, r.traits, ...counts(r)]),
      [['node2', null, null, 8, 1, 2, 2, 0, 3]],
    )
    const byType = await rows('?group_by=device_type&hostname=node2')
    assert.deepEqual(
      byType.map((r) => [r.device_type, ...counts(r)]),
      [
        ['FPGA', 4, 0, 2, 0, 0, 2],
        ['GPU', 4, 1, 0, 2, 0, 1],
      ],
    )
    const byRc = await rows('?group_by=resource_class&resource_class=PGPU&hostname=node2')
    assert.deepEqual(
      byRc.map((r) => [r.resource_class, r.hostname, r.total]),
      [['PGPU', null, 4]],
    )
  })

  void it('a bad parameter is a 400 naming it', async () => {
    for (const [q, field] of [
      ['?group_by=rack', 'group_by'],
      ['?resource_class=pgpu', 'resource_class'],
      ['?trait=CUSTOM_OK&trait=bad-trait', 'trait'],
      ['?hostname=a&hostname=b', 'hostname'],
      ['?hostname=', 'hostname'],
    ] as const) {
      const res = await get(q)
      assert.equal(res.statusCode, 400, `${q}: ${res.body}`)
      assert.match(fault(res), new RegExp(`field '${field}'`), q)
    }
  })

  void it('needs 2.6: 404 at 2.5 and before, 406 past the newest', async () => {
    for (const version of ['2.5', '2.0']) {
      const old = await get('', version)
      assert.equal(old.statusCode, 404, version)
      assert.match(fault(old), /needs microversion 2\.6/)
    }
    const none = await s.request({ method: 'GET', url: '/v2/capacity' })
    assert.equal(none.statusCode, 404)
    assert.equal((await get('', '2.99')).statusCode, 406)
  })

  void it('admin and project reader may read it; a token with no role may not', async () => {
    const make = async (roles: string[]) => {
      const app = await createApp(
        { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) },
        { auth: authWith(roles) },
      )
      apps.push(app)
      return app.inject({
        method: 'GET',
        url: '/v2/capacity',
        headers: { host: HOST, 'openstack-api-version': 'accelerator 2.6' },
      })
    }
    assert.equal((await make(['reader'])).statusCode, 200)
    assert.equal((await make(['admin', 'reader', 'member'])).statusCode, 200)
    const denied = await make([])
    assert.equal(denied.statusCode, 403, denied.body)
    assert.match(fault(denied), /cyborg:capacity:get/)
  })

  void it('cyborg capacity prints a plain table when piped', async () => {
    const url = await s.app.listen({ host: '127.0.0.1', port: 0 })
    const run = await cyborg(['capacity', '--host', 'node2'], { CYBORG_URL: url })
    assert.equal(run.code, 0, run.stderr)
    const lines = run.stdout.trimEnd().split('\n')
    assert.match(
      lines[0]!,
      /^Resource Class\s+Host\s+Traits\s+Total\s+Used\s+Reserved\s+Fenced\s+Cleaning\s+Free$/,
    )
    assert.match(lines[2]!, /^FPGA\s+node2\s+CUSTOM_FPGA_INTEL\s+4\s+0\s+2\s+0\s+0\s+2$/)
    assert.match(lines[3]!, /^PGPU\s+node2\s+CUSTOM_GPU_NVIDIA\s+4\s+1\s+0\s+2\s+0\s+1$/)
    assert.doesNotMatch(run.stdout, /█|░/)
    const grouped = await cyborg(
      ['capacity', '--group-by', 'host', '--trait', 'CUSTOM_GPU_NVIDIA', '--format', 'json'],
      { CYBORG_URL: url },
    )
    assert.equal(grouped.code, 0, grouped.stderr)
    const body = JSON.parse(grouped.stdout) as { group_by: string; capacity: Row[] }
    assert.equal(body.group_by, 'host')
    assert.deepEqual(
      body.capacity.map((r) => [r.hostname, r.total]),
      [['node2', 4]],
    )
    const bad = await cyborg(['capacity', '--group-by', 'rack'], { CYBORG_URL: url })
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /group_by/)
  })
})
