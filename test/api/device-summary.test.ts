/**
 * `GET /v2/devices/summary` (2.10) over the in-process stack: its counts agree with the device
 * list; an unhealthy device is listed with its reason; `unhealthy_limit` caps the list and a bad
 * one is a 400 naming it; below 2.10 a 404 naming the microversion; the static path does not
 * shadow `/devices/{uuid}`; RBAC as the device list (`cyborg:device:get_all`).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { fault, HOST, startStack, type Stack } from './stack.js'

interface Summary {
  total: number
  by_type: Record<string, number>
  by_lifecycle: Record<string, number>
  by_status: Record<string, number>
  by_health: Record<string, number>
  hosts: { hostname: string; devices: number; unhealthy: number }[]
  unhealthy: {
    total: number
    devices: {
      uuid: string
      hostname: string
      type: string
      health: string
      health_reason: string | null
      health_updated_at: string | null
      health_since: string
    }[]
  }
}

interface Device {
  uuid: string
  type: string
  hostname: string
  status: string
  lifecycle: string
  health: string
}

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

const countBy = (devices: Device[], key: keyof Device) => {
  const out: Record<string, number> = {}
  for (const d of devices) out[d[key]] = (out[d[key]] ?? 0) + 1
  return out
}

void describe('v2 devices summary', () => {
  let s: Stack
  const apps: FastifyInstance[] = []
  const get = (url: string, version: string | null = '2.10') =>
    s.request({ method: 'GET', url, ...(version === null ? {} : { version }) })
  const summary = async (q = '') => {
    const res = await get(`/v2/devices/summary${q}`)
    assert.equal(res.statusCode, 200, res.body)
    return res.json() as Summary
  }

  before(async () => {
    s = await startStack()
    await s.db.db
      .updateTable('devices')
      .set({
        health: 'failed',
        health_reason: '2 uncorrectable ECC errors',
        health_updated_at: '2026-11-25T06:00:00.000000+00:00',
      })
      .where('hostname', '=', 'node2')
      .where('type', '=', 'FPGA')
      .where('cpid_info', 'like', '%"bus":"11"%')
      .execute()
  })

  after(async () => {
    for (const app of apps) await app.close()
    await s?.close()
  })

  it('is there from 2.10 only, with and without the /v2 prefix', async () => {
    for (const url of ['/v2/devices/summary', '/devices/summary'])
      for (const version of [null, '2.9']) {
        const res = await get(url, version)
        assert.equal(res.statusCode, 404, `${url} ${version}`)
        assert.match(fault(res), /needs microversion 2\.10/)
      }
    assert.equal((await get('/devices/summary')).statusCode, 200)
    assert.equal((await get('/v2/devices/summary', 'latest')).statusCode, 200)
  })

  it('counts what the device list holds', async () => {
    const res = await get('/v2/devices')
    const devices = (res.json() as { devices: Device[] }).devices
    const s1 = await summary()
    assert.equal(s1.total, devices.length)
    assert.deepEqual(s1.by_type, countBy(devices, 'type'))
    assert.deepEqual(s1.by_lifecycle, countBy(devices, 'lifecycle'))
    assert.deepEqual(s1.by_status, countBy(devices, 'status'))
    assert.deepEqual(s1.by_health, countBy(devices, 'health'))
    const hosts = [...new Set(devices.map((d) => d.hostname))].sort()
    assert.deepEqual(
      s1.hosts.map((h) => h.hostname),
      hosts,
    )
    for (const h of s1.hosts) {
      const mine = devices.filter((d) => d.hostname === h.hostname)
      assert.equal(h.devices, mine.length)
      assert.equal(h.unhealthy, mine.filter((d) => d.health !== 'ok').length)
    }
    const unhealthy = devices.filter((d) => d.health !== 'ok')
    assert.equal(s1.unhealthy.total, unhealthy.length)
    const failed = s1.unhealthy.devices.find((d) => d.health === 'failed')
    assert.ok(failed, JSON.stringify(s1.unhealthy))
    assert.equal(failed.hostname, 'node2')
    assert.equal(failed.type, 'FPGA')
    assert.equal(failed.health_reason, '2 uncorrectable ECC errors')
    assert.match(failed.health_updated_at ?? '', /^2026-11-25T06:00:00/)
    assert.equal(failed.health_since, failed.health_updated_at)
    assert.ok(devices.some((d) => d.uuid === failed.uuid))
  })

  it('caps the unhealthy list with unhealthy_limit, and refuses a bad one by name', async () => {
    const none = await summary('?unhealthy_limit=0')
    assert.deepEqual(none.unhealthy.devices, [])
    assert.ok(none.unhealthy.total >= 1)
    for (const bad of ['-1', 'abc', '1001', '01']) {
      const res = await get(`/v2/devices/summary?unhealthy_limit=${bad}`)
      assert.equal(res.statusCode, 400, bad)
      assert.match(fault(res), /unhealthy_limit/)
    }
  })

  it('leaves /devices/{uuid} as it was', async () => {
    const res = await get('/v2/devices/summary-not')
    assert.equal(res.statusCode, 404)
    assert.match(fault(res), /device summary-not not found/)
    const post = await s.request({ method: 'POST', url: '/v2/devices/summary', version: '2.10' })
    assert.equal(post.statusCode, 405)
  })

  it('is guarded as the device list: a manager yes, a reader no', async () => {
    const as = async (roles: string[]) => {
      const app = await createApp(
        { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) },
        { auth: authWith(roles) },
      )
      apps.push(app)
      return app.inject({
        method: 'GET',
        url: '/v2/devices/summary',
        headers: { host: HOST, 'openstack-api-version': 'accelerator 2.10' },
      })
    }
    assert.equal((await as(['manager'])).statusCode, 200)
    const denied = await as(['reader'])
    assert.equal(denied.statusCode, 403)
    assert.match(fault(denied), /cyborg:device:get_all/)
  })
})
