/**
 * The administration endpoints under /v1 over HTTP, in-process, with a real conductor and agent
 * (test/api/stack.ts: node1 runs the fake driver; node2 is known from a report but has no agent):
 * drivers, discovery, backend services and status, with their 200/400/404/409 answers.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, startStack, type Stack } from './stack.js'

const INSTANCE = '0b9c0d1e-0000-4000-8000-00000000a0a0'
type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

void describe('v1 administration endpoints', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({
      autoActivate: true,
      conductor: { driverAdmin: { listTimeoutMs: 300, actionTimeoutMs: 1500 } },
    })
  })
  after(async () => stack?.close())

  const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) => {
    const res = await stack.request({
      method,
      url,
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
    return {
      status: res.statusCode,
      body: res.statusCode < 400 ? (res.json() as Json) : undefined,
      fault: res.statusCode >= 400 ? fault(res) : undefined,
    }
  }

  void it('lists drivers per host; an agent that does not answer is unreachable; an unknown host is a 404', async () => {
    const { status, body } = await call('GET', '/v1/drivers')
    assert.equal(status, 200)
    assert.deepEqual(
      body!.drivers.map((d: Json) => [
        d.hostname,
        d.name,
        d.status,
        d.enabled,
        d.devices,
        d.last_discovery.ok,
      ]),
      [['node1', 'fake', 'installed', true, 1, true]],
    )
    assert.deepEqual(
      body!.hosts.map((h: Json) => [h.hostname, h.status]),
      [
        ['node1', 'ok'],
        ['node2', 'unreachable'],
      ],
    )
    assert.equal((await call('GET', '/v1/drivers?hostname=node1')).body!.hosts.length, 1)
    const missing = await call('GET', '/v1/drivers?hostname=nowhere')
    assert.equal(missing.status, 404)
    assert.match(missing.fault!, /host nowhere is not a known agent; known agents: node1, node2/)
  })

  void it('installs (with or without a body); names unknown fields, drivers and hosts', async () => {
    const all = await call('POST', '/v1/drivers/fake/install')
    assert.equal(all.status, 200)
    assert.deepEqual(
      all.body!.hosts.map((h: Json) => [h.hostname, h.status, h.enabled]),
      [
        ['node1', 'ok', true],
        ['node2', 'unreachable', null],
      ],
    )
    const one = await call('POST', '/v1/drivers/fake_driver/install', { hostname: 'node1' })
    assert.deepEqual([one.status, one.body!.hosts.length], [200, 1])
    const extra = await call('POST', '/v1/drivers/fake/install', { hostname: 'node1', force: true })
    assert.deepEqual(
      [extra.status, extra.fault],
      [400, "Invalid input for field 'force': unknown field"],
    )
    const unknown = await call('POST', '/v1/drivers/nope/install', { hostname: 'node1' })
    assert.equal(unknown.status, 404)
    assert.match(unknown.fault!, /driver nope is not configured on this agent/)
    assert.equal(
      (await call('POST', '/v1/drivers/fake/uninstall', { hostname: 'elsewhere' })).status,
      404,
    )
  })

  void it('refuses to uninstall a driver whose device is bound (409 naming it); uninstalls once it is free', async () => {
    const c = stack.core.conductorClient
    await c.createDeviceProfile({
      name: 'admin-fpga',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
    const [arq] = await c.createArqs({
      deviceProfileName: 'admin-fpga',
      projectId: null,
      maxArqs: 4,
    })
    await c.bindArqs({ bindings: { [arq!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE } } })
    const refused = await call('POST', '/v1/drivers/fake/uninstall', { hostname: 'node1' })
    assert.equal(refused.status, 409)
    assert.match(
      refused.fault!,
      new RegExp(
        `node1_FakeDevice on node1 \\(held by accelerator request ${arq!.uuid} Bound .*detach or unbind them first`,
      ),
    )
    await c.deleteArqs({ uuids: [arq!.uuid] })
    await stack.core.conductor!.cleaningIdle() // the released unit is cleaned first
    const done = await call('POST', '/v1/drivers/fake/uninstall', { hostname: 'node1' })
    assert.deepEqual(
      [done.status, done.body!.hosts[0].status, done.body!.hosts[0].enabled],
      [200, 'ok', false],
    )
    const listed = await call('GET', '/v1/drivers?hostname=node1')
    assert.deepEqual(
      listed.body!.drivers.map((d: Json) => [d.status, d.devices, d.last_discovery]),
      [['disabled', 0, null]],
    )
    assert.equal(
      (await call('POST', '/v1/drivers/fake/install', { hostname: 'node1' })).status,
      200,
    )
  })

  void it('updates options (PATCH); a bad body is a 400 naming the field', async () => {
    const ok = await call('PATCH', '/v1/drivers/fake', {
      hostname: 'node1',
      options: { note: 'x' },
    })
    assert.equal(ok.status, 200)
    assert.deepEqual(ok.body!.hosts[0].options, { note: 'x' })
    assert.equal(
      (await call('PATCH', '/v1/drivers/fake', { hostname: 'node1' })).fault,
      "Invalid input for field 'options': required",
    )
    assert.equal((await call('PATCH', '/v1/drivers/fake', { options: { note: 1 } })).status, 400)
    assert.match((await call('PATCH', '/v1/drivers/fake', { options: {} })).fault!, /options/)
  })

  void it('discovers on demand and answers per host', async () => {
    const { status, body } = await call('POST', '/v1/discovery', { hostname: 'node1' })
    assert.equal(status, 200)
    assert.deepEqual(
      body!.hosts.map((h: Json) => [h.hostname, h.status, h.added, h.changed, h.removed]),
      [['node1', 'ok', [], [], []]],
    )
    const all = await call('POST', '/v1/discovery')
    assert.deepEqual(
      all.body!.hosts.map((h: Json) => [h.hostname, h.status]),
      [
        ['node1', 'ok'],
        ['node2', 'unreachable'],
      ],
    )
    assert.equal(
      (await call('POST', '/v1/discovery', { host: 'node1' })).fault,
      "Invalid input for field 'host': unknown field",
    )
  })

  void it('lists backend services derived from the inventory; filters by host and backend', async () => {
    const { status, body } = await call('GET', '/v1/backend_services')
    assert.equal(status, 200)
    const rows = body!.services as Json[]
    const fake = rows.find((r) => r.hostname === 'node1')!
    assert.deepEqual(
      [fake.service, fake.backend_type, fake.resource_class, fake.units, fake.address],
      ['fpga', 'FPGA', 'FPGA', 16, '0000:0c:00.0'],
    )
    assert.deepEqual(
      rows.filter((r) => r.hostname === 'node2').map((r) => r.service),
      ['gpu-passthrough', 'fpga', 'gpu-passthrough', 'fpga'],
    )
    const one = await call('GET', `/v1/backend_services?backend=${fake.backend as string}`)
    assert.deepEqual(
      one.body!.services.map((r: Json) => r.deployable),
      ['node1_FakeDevice'],
    )
    assert.equal(
      (await call('GET', '/v1/backend_services?hostname=nowhere')).body!.services.length,
      0,
    )
    assert.equal(
      (await call('GET', '/v1/backend_services?backend=x')).fault,
      'Invalid input for field \'backend\': must be a device UUID, got "x"',
    )
    const gone = await call(
      'GET',
      '/v1/backend_services?backend=00000000-0000-4000-8000-000000000000',
    )
    assert.equal(gone.status, 404)
  })

  void it('shows each process up or down by its last heartbeat', async () => {
    await stack.db.db
      .insertInto('services')
      .values({
        host: 'old',
        binary: 'cyborg-conductor',
        version: '0.1.0',
        report_hash: null,
        last_seen: '2020-01-01T00:00:00.000000+00:00',
        created_at: '2020-01-01T00:00:00.000000+00:00',
        updated_at: null,
      })
      .execute()
    const { status, body } = await call('GET', '/v1/status')
    assert.equal(status, 200)
    const states = Object.fromEntries(
      (body!.services as Json[]).map((s) => [`${s.host as string}/${s.binary as string}`, s.state]),
    )
    assert.deepEqual(states, {
      'node1/cyborg-agent': 'up',
      'node2/cyborg-agent': 'up',
      'old/cyborg-conductor': 'down',
    })
    assert.equal(body!.down_after_seconds, 60)
  })
})
