/**
 * `GET /v2/devices/{uuid}/attach_handles` (2.10) over HTTP on an in-process app: each unit with its
 * deployable, address, state and holder; 404 for an unknown or malformed uuid and below 2.10
 * (naming the microversion); 403 for a project member (policy cyborg:device:get_one).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Authenticator } from '../../src/api/auth.js'
import { NotAuthenticatedError } from '../../src/domain/errors.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { createTestApp, faultOf, type TestApp } from '../support/api-app.js'
import { ingestSnapshot } from '../support/ingest.js'
import { sampleSnapshot } from '../support/sample-inventory.js'

const ROLES: Record<string, string[]> = {
  admin: ['admin', 'manager', 'member', 'reader'],
  member: ['member', 'reader'],
}
const auth: Authenticator = {
  strategy: 'keystone',
  authenticate: (token) => {
    const roles = token === undefined ? undefined : ROLES[token]
    if (roles === undefined) throw new NotAuthenticatedError('unknown token')
    return freezeContext({
      userId: `u-${token!}`,
      projectId: 'p1',
      roles,
      isAdmin: roles.includes('admin'),
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    })
  },
}

interface HandleView {
  uuid: string
  deployable_id: number
  deployable_uuid: string
  deployable_name: string
  attach_type: string
  attach_info: Record<string, unknown>
  in_use: boolean
  state: string
  clean_state: string | null
  arq_uuid: string | null
}

void describe('GET /v2/devices/{uuid}/attach_handles', () => {
  let t: TestApp
  let device: string
  before(async () => {
    t = await createTestApp({ auth })
    await ingestSnapshot(t.db.db, sampleSnapshot('h1', 2, { handles: 2 }), {
      autoActivate: true,
      now: '2026-11-25T06:00:00.000000+00:00',
    })
    const row = await t.db.db
      .selectFrom('devices')
      .select(['id', 'uuid'])
      .orderBy('id')
      .executeTakeFirstOrThrow()
    device = row.uuid
    const [first] = await t.db.db
      .selectFrom('attach_handles as h')
      .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
      .select('h.id')
      .where('d.device_id', '=', row.id)
      .orderBy('h.id')
      .execute()
    await t.db.db
      .updateTable('attach_handles')
      .set({ in_use: 1, clean_state: 'pending' })
      .where('id', '=', first!.id)
      .execute()
  })
  after(() => t.close())

  const get = (uuid: string, version = '2.10', token = 'admin') =>
    t.app.inject({
      url: `/v2/devices/${uuid}/attach_handles`,
      headers: { 'x-auth-token': token, 'openstack-api-version': `accelerator ${version}` },
    })

  void it("lists the device's units with their deployable, address and state", async () => {
    const res = await get(device)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['openstack-api-version'], 'accelerator 2.10')
    const handles = (res.json() as { attach_handles: HandleView[] }).attach_handles
    assert.deepEqual(
      handles.map((h) => [h.state, h.in_use, h.clean_state, h.arq_uuid]),
      [
        ['cleaning', true, 'pending', null],
        ['free', false, null, null],
      ],
    )
    const [h] = handles
    assert.equal(h!.attach_type, 'PCI')
    assert.deepEqual(h!.attach_info, { domain: '0000', bus: '10', device: '00', function: '0' })
    assert.equal(h!.deployable_name, 'h1_0000:10:00.0')
    // deployable_id is what GET /v2/attributes filters by.
    const attrs = await t.app.inject({
      url: `/v2/attributes?deployable_id=${h!.deployable_id}`,
      headers: { 'x-auth-token': 'admin' },
    })
    assert.deepEqual(
      (attrs.json() as { attributes: { key: string }[] }).attributes.map((a) => a.key).sort(),
      ['rc', 'trait0'],
    )
  })

  void it('is a 404 for an unknown or malformed uuid, and below 2.10', async () => {
    const unknown = await get('00000000-0000-4000-8000-000000000000')
    assert.equal(unknown.statusCode, 404)
    assert.match(
      faultOf(unknown.body).faultstring,
      /device 00000000-0000-4000-8000-000000000000 not found/,
    )
    assert.equal((await get('not-a-uuid')).statusCode, 404)
    const old = await get(device, '2.9')
    assert.equal(old.statusCode, 404)
    assert.match(faultOf(old.body).faultstring, /needs microversion 2\.10/)
  })

  void it('is refused to a project member (cyborg:device:get_one)', async () => {
    const res = await get(device, '2.10', 'member')
    assert.equal(res.statusCode, 403)
    assert.match(faultOf(res.body).faultstring, /cyborg:device:get_one/)
  })
})
