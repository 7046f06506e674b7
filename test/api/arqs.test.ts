/**
 * The v2 accelerator requests over the real in-process stack (fake driver on node1, active), in
 * the forms Nova and the openstack CLI send (wire-nova.md, wire-openstack-cli.md).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const INSTANCE = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
/** The keys of cyborg-v2-facts §1.5 (the ARQ object). */
const ARQ_KEYS = [
  'attach_handle_info',
  'attach_handle_type',
  'attach_handle_uuid',
  'created_at',
  'device_profile_group_id',
  'device_profile_name',
  'device_rp_uuid',
  'hostname',
  'instance_uuid',
  'links',
  'project_id',
  'state',
  'updated_at',
  'uuid',
]

interface ArqBody {
  uuid: string
  state: string
  hostname: string | null
  device_rp_uuid: string | null
  instance_uuid: string | null
  attach_handle_type: string
  attach_handle_uuid: string | null
  attach_handle_info: Record<string, string>
  device_profile_group_id: number
}

void describe('v2 accelerator requests', () => {
  let s: Stack
  let rpUuid: string
  before(async () => {
    s = await startStack({ autoActivate: true })
    const profile = [
      {
        name: 'dp-arq',
        groups: [{ 'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
      },
    ]
    const res = await s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify(profile),
    })
    assert.equal(res.statusCode, 201, res.body)
    const deployables = (await s.request({ url: '/v2/deployables' })).json().deployables as {
      name: string
      rp_uuid: string
    }[]
    rpUuid = deployables.find((d) => d.name === 'node1_FakeDevice')!.rp_uuid
    assert.ok(rpUuid)
  })
  after(() => s.close())

  const create = async (body: unknown = { device_profile_name: 'dp-arq' }) => {
    const res = await s.request({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify(body),
    })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().arqs as ArqBody[]
  }
  const patch = (body: unknown, url = '/v2/accelerator_requests', version?: string) =>
    s.request({
      method: 'PATCH',
      url,
      headers: json,
      payload: JSON.stringify(body),
      ...(version ? { version } : {}),
    })
  const bindOps = (instance: string, rp?: string) => [
    { path: '/hostname', op: 'add', value: 'node1' },
    ...(rp ? [{ path: '/device_rp_uuid', op: 'add', value: rp }] : []),
    { path: '/instance_uuid', op: 'add', value: instance },
  ]
  const get = async (uuid: string) =>
    (await s.request({ url: `/v2/accelerator_requests/${uuid}` })).json() as ArqBody
  const del = (url: string) => s.request({ method: 'DELETE', url })

  void it('create (Nova body) → 201 with one Initial ARQ per unit; list and get show the same objects', async () => {
    const arqs = await create()
    assert.equal(arqs.length, 2)
    for (const arq of arqs) {
      assert.deepEqual(Object.keys(arq).sort(), ARQ_KEYS)
      assert.equal(arq.state, 'Initial')
      assert.equal(arq.device_profile_group_id, 0)
      assert.equal(arq.attach_handle_type, '')
      assert.deepEqual(arq.attach_handle_info, {})
      assert.equal(arq.attach_handle_uuid, null)
      assert.equal(arq.hostname, null)
      assert.deepEqual((arq as unknown as { links: unknown }).links, [
        { href: `http://${HOST}/v2/accelerator_requests/${arq.uuid}`, rel: 'self' },
      ])
      assert.deepEqual(await get(arq.uuid), arq)
    }
    const listed = (await s.request({ url: '/accelerator_requests' })).json().arqs as ArqBody[]
    assert.deepEqual(listed.slice(-2), arqs)
  })

  void it('create (the CLI body: device_profile_group_id null or a numeric string) → 201', async () => {
    assert.equal(
      (await create({ device_profile_group_id: null, device_profile_name: 'dp-arq' })).length,
      2,
    )
    assert.equal(
      (await create({ device_profile_group_id: '0', device_profile_name: 'dp-arq' })).length,
      2,
    )
  })

  void it('pages with limit and marker', async () => {
    const all = (await s.request({ url: '/v2/accelerator_requests' })).json().arqs as ArqBody[]
    const first = (await s.request({ url: '/v2/accelerator_requests?limit=1' })).json()
      .arqs as ArqBody[]
    assert.deepEqual(first, all.slice(0, 1))
    const next = await s.request({ url: `/v2/accelerator_requests?limit=2&marker=${all[0]!.uuid}` })
    assert.deepEqual(next.json().arqs, all.slice(1, 3))
  })

  void it("binds with Nova's PATCH; ?instance=&bind_state=resolved shows them Bound with their handles", async () => {
    const arqs = await create()
    const instance = INSTANCE(1)
    const res = await patch(
      Object.fromEntries(arqs.map((a) => [a.uuid, bindOps(instance, rpUuid)])),
    )
    assert.equal(res.statusCode, 202, res.body)
    assert.equal(res.body, '')
    const resolved = await s.request({
      url: `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
    })
    assert.equal(resolved.statusCode, 200)
    const bound = resolved.json().arqs as ArqBody[]
    assert.deepEqual(bound.map((a) => a.uuid).sort(), arqs.map((a) => a.uuid).sort())
    for (const arq of bound) {
      assert.equal(arq.state, 'Bound')
      assert.equal(arq.hostname, 'node1')
      assert.equal(arq.device_rp_uuid, rpUuid)
      assert.equal(arq.instance_uuid, instance)
      assert.equal(arq.attach_handle_type, 'TEST_PCI')
      assert.deepEqual(Object.keys(arq.attach_handle_info).sort(), [
        'bus',
        'device',
        'domain',
        'function',
      ])
      assert.match(arq.attach_handle_uuid!, /^[0-9a-f-]{36}$/)
    }
    assert.notEqual(bound[0]!.attach_handle_uuid, bound[1]!.attach_handle_uuid)
    // bind_state alone keeps only resolved ARQs (of every instance).
    const onlyResolved = (
      await s.request({ url: '/v2/accelerator_requests?bind_state=resolved' })
    ).json().arqs as ArqBody[]
    assert.ok(
      onlyResolved.length >= 2 &&
        onlyResolved.every((a) => ['Bound', 'BindFailed', 'Deleting'].includes(a.state)),
    )
    // Binding a Bound ARQ again is refused, naming its state.
    const again = await patch({ [arqs[0]!.uuid]: bindOps(INSTANCE(9), rpUuid) })
    assert.equal(again.statusCode, 409)
    assert.match(fault(again), /Bound/)
    // The PATCH's key is on both (docs/arqs.md, "Redelivered binds"); each PATCH has its own, so
    // the very same body again is refused too.
    const keys = await s.db.db
      .selectFrom('accelerator_requests')
      .select('bind_id')
      .where(
        'uuid',
        'in',
        arqs.map((a) => a.uuid),
      )
      .execute()
    assert.equal(new Set(keys.map((k) => k.bind_id)).size, 1)
    assert.match(keys[0]!.bind_id ?? '', /^[0-9a-f]{8}-[0-9a-f-]{27}$/)
    const same = await patch(
      Object.fromEntries(arqs.map((a) => [a.uuid, bindOps(instance, rpUuid)])),
    )
    assert.equal(same.statusCode, 409)
    assert.match(fault(same), /Bound/)
  })

  void it('423 with no body while an ARQ of the instance is not resolved', async () => {
    const [arq] = await create()
    const instance = INSTANCE(2)
    await s.db.db
      .updateTable('accelerator_requests')
      .set({ instance_uuid: instance })
      .where('uuid', '=', arq!.uuid)
      .execute()
    const res = await s.request({
      url: `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
    })
    assert.equal(res.statusCode, 423)
    assert.equal(res.body, '')
    const plain = await s.request({ url: `/v2/accelerator_requests?instance=${instance}` })
    assert.deepEqual(
      plain.json().arqs.map((a: ArqBody) => a.uuid),
      [arq!.uuid],
    )
    await s.db.db
      .updateTable('accelerator_requests')
      .set({ instance_uuid: null })
      .where('uuid', '=', arq!.uuid)
      .execute()
  })

  void it('binds standalone (no device_rp_uuid) and at 2.1 with /project_id; unbinds with the CLI form', async () => {
    const [a, b] = await create()
    const standalone = await patch(
      { [a!.uuid]: bindOps(INSTANCE(3)) },
      `/v2/accelerator_requests/${a!.uuid}`,
    )
    assert.equal(standalone.statusCode, 202, standalone.body)
    assert.equal((await get(a!.uuid)).state, 'Bound')
    const ops = [...bindOps(INSTANCE(4), rpUuid), { path: '/project_id', op: 'add', value: 'p1' }]
    const withProject = await patch({ [b!.uuid]: ops }, '/accelerator_requests', '2.1')
    assert.equal(withProject.statusCode, 202, withProject.body)
    assert.equal(((await get(b!.uuid)) as unknown as { project_id: string }).project_id, 'p1')

    const removeOps = ['/hostname', '/instance_uuid', '/device_rp_uuid'].map((path) => ({
      path,
      op: 'remove',
    }))
    const unbind = await patch({ [a!.uuid]: removeOps }, `/v2/accelerator_requests/${a!.uuid}`)
    assert.equal(unbind.statusCode, 202, unbind.body)
    const shown = await get(a!.uuid)
    assert.equal(shown.state, 'Unbound')
    assert.deepEqual(
      [shown.hostname, shown.instance_uuid, shown.attach_handle_type, shown.attach_handle_uuid],
      [null, null, '', null],
    )
    assert.deepEqual(shown.attach_handle_info, {})
  })

  void it('deletes by instance (idempotent), by ?arqs= (unknown → 404 after deleting the rest) and by uuid', async () => {
    const arqs = await create()
    const instance = INSTANCE(5)
    assert.equal(
      (await patch(Object.fromEntries(arqs.map((a) => [a.uuid, bindOps(instance, rpUuid)]))))
        .statusCode,
      202,
    )
    assert.equal((await del(`/v2/accelerator_requests?instance=${instance}`)).statusCode, 204)
    assert.equal((await del(`/v2/accelerator_requests?instance=${instance}`)).statusCode, 204)
    assert.equal(
      (await s.request({ url: `/v2/accelerator_requests/${arqs[0]!.uuid}` })).statusCode,
      404,
    )

    const [c, d] = await create()
    const missing = INSTANCE(77)
    const partial = await del(`/v2/accelerator_requests?arqs=${c!.uuid},${missing}`)
    assert.equal(partial.statusCode, 404)
    assert.match(fault(partial), new RegExp(missing))
    assert.equal((await s.request({ url: `/v2/accelerator_requests/${c!.uuid}` })).statusCode, 404)
    const ok = await del(`/v2/accelerator_requests?arqs=${d!.uuid}`)
    assert.equal(ok.statusCode, 204)
    assert.equal(ok.body, '')

    const [e] = await create()
    assert.equal((await del(`/accelerator_requests/${e!.uuid}`)).statusCode, 204)
    const gone = await del(`/v2/accelerator_requests/${e!.uuid}`)
    assert.equal(gone.statusCode, 404)
    assert.match(fault(gone), new RegExp(e!.uuid))
  })
})
