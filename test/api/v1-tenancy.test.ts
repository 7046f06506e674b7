/**
 * v1 attachments are accelerator requests of the attaching project (issue 27, defect 2): a manager
 * of another project never sees them (`attached_to`, `attachments`, a 409's holders) and never
 * detaches them (404), through the API or straight through the conductor's RPC; an admin sees and
 * detaches every project's. The hardware itself (the accelerator) stays visible to every manager.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { createApp } from '../../src/api/app.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import type { Authenticator } from '../../src/api/auth.js'
import { NotAuthenticatedError } from '../../src/domain/errors.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { STORM_HOST, stormDevices } from '../support/storm-inventory.js'
import { fault, serveCleaningAgent, startStack, type Stack } from './stack.js'

const A = 'a0000000000000000000000000000001'
const B = 'b0000000000000000000000000000002'
const vm = (n: number) => `7e5a1000-0000-4000-8000-${String(n).padStart(12, '0')}`

/** Tokens `<project>-<role>`: a manager of A or B, or an admin (of B). */
const TOKENS: Record<string, [project: string, roles: string[]]> = {
  'a-manager': [A, ['manager', 'member', 'reader']],
  'b-manager': [B, ['manager', 'member', 'reader']],
  'b-admin': [B, ['admin', 'manager', 'member', 'reader']],
}
const auth: Authenticator = {
  strategy: 'keystone',
  authenticate: (token) => {
    const who = token === undefined ? undefined : TOKENS[token]
    if (who === undefined) throw new NotAuthenticatedError('unknown token')
    return freezeContext({
      userId: `u-${token!}`,
      projectId: who[0],
      roles: who[1],
      isAdmin: who[1].includes('admin'),
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    })
  },
}

interface View {
  uuid: string
  name: string
  attached_to: string[]
  attachments: { arq_uuid: string; instance_uuid: string | null }[]
}

void describe('v1 attachments across projects', () => {
  let s: Stack
  let fake: View
  let single: View
  const as = async (token: string, method: string, url: string, body?: unknown) => {
    const res = await s.request({
      method: method as 'GET',
      url,
      headers: {
        'x-auth-token': token,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    })
    if (method === 'DELETE') await s.core.conductor!.cleaningIdle()
    return res
  }
  const viewAs = async (token: string, uuid: string) => {
    const res = await as(token, 'GET', `/v1/accelerators/${uuid}`)
    assert.equal(res.statusCode, 200, res.body)
    return res.json() as View
  }

  before(async () => {
    s = await startStack({ autoActivate: true, auth })
    await serveCleaningAgent(s, STORM_HOST)
    const list = stormDevices(1, 1)
    await s.core.conductorClient.reportInventory({
      host: STORM_HOST,
      hash: inventoryHash(list),
      devices: list,
      autoActivate: true,
    })
    const all = (await as('b-admin', 'GET', '/v1/accelerators')).json().accelerators as View[]
    fake = all.find((a) => a.name === 'node1_FakeDevice')!
    single = all.find((a) => a.name.startsWith(STORM_HOST))!
    for (const acc of [fake, single]) {
      const res = await as('a-manager', 'PUT', `/v1/accelerators/${acc.uuid}`, {
        instance_uuid: vm(1),
      })
      assert.equal(res.statusCode, 200, res.body)
    }
  })
  after(() => s?.close())

  void it("another project's manager sees the accelerator but none of its attachments", async () => {
    const mine = await viewAs('a-manager', fake.uuid)
    assert.deepEqual(mine.attached_to, [vm(1)])
    const arq = mine.attachments[0]!.arq_uuid
    const one = await as('b-manager', 'GET', `/v1/accelerators/${fake.uuid}`)
    assert.equal(one.statusCode, 200)
    assert.deepEqual(one.json().attached_to, [])
    assert.deepEqual(one.json().attachments, [])
    const list = await as('b-manager', 'GET', '/v1/accelerators')
    for (const body of [one.body, list.body]) {
      assert.doesNotMatch(body, new RegExp(vm(1)))
      assert.doesNotMatch(body, new RegExp(arq))
    }
    // An admin sees every project's.
    assert.deepEqual((await viewAs('b-admin', fake.uuid)).attached_to, [vm(1)])
  })

  void it("another project's manager cannot detach them (404, untouched), nor learn them from a 409", async () => {
    const byInstance = await as(
      'b-manager',
      'DELETE',
      `/v1/accelerators/${fake.uuid}?instance_uuid=${vm(1)}`,
    )
    assert.equal(byInstance.statusCode, 404, byInstance.body)
    assert.match(fault(byInstance), /instance_uuid|no attachment/)
    const bad = await as('b-manager', 'DELETE', `/v1/accelerators/${fake.uuid}?instance_uuid=nope`)
    assert.equal(bad.statusCode, 400, bad.body)
    assert.match(fault(bad), /'instance_uuid'/)
    // Without an instance: nothing of B's is attached, so nothing is detached (idempotent 204).
    assert.equal((await as('b-manager', 'DELETE', `/v1/accelerators/${fake.uuid}`)).statusCode, 204)
    assert.equal(
      (await as('b-manager', 'DELETE', `/v1/accelerators/${single.uuid}`)).statusCode,
      204,
    )
    assert.deepEqual((await viewAs('a-manager', fake.uuid)).attached_to, [vm(1)])
    assert.deepEqual((await viewAs('a-manager', single.uuid)).attached_to, [vm(1)])
    // The one-unit accelerator is full: the 409 says so without naming A's instance or attachment.
    const arq = (await viewAs('a-manager', single.uuid)).attachments[0]!.arq_uuid
    const full = await as('b-manager', 'PUT', `/v1/accelerators/${single.uuid}`, {
      instance_uuid: vm(2),
    })
    assert.equal(full.statusCode, 409, full.body)
    assert.doesNotMatch(full.body, new RegExp(`${vm(1)}|${arq}`))
    // Attaching to A's instance makes B's own attachment, never returns A's as B's.
    const same = await as('b-manager', 'PUT', `/v1/accelerators/${fake.uuid}`, {
      instance_uuid: vm(1),
    })
    assert.equal(same.statusCode, 200, same.body)
    assert.equal((same.json() as View).attachments.length, 1)
    assert.notEqual((same.json() as View).attachments[0]!.arq_uuid, arq)
    assert.equal((await viewAs('b-admin', fake.uuid)).attachments.length, 2)
    assert.equal((await as('b-manager', 'DELETE', `/v1/accelerators/${fake.uuid}`)).statusCode, 204)
    assert.deepEqual((await viewAs('a-manager', fake.uuid)).attached_to, [vm(1)])
  })

  void it("the conductor refuses too: a detach scoped to B never touches A's attachment", async () => {
    await assert.rejects(
      s.core.conductorClient.detachAccelerator({
        uuid: fake.uuid,
        instanceUuid: vm(1),
        projectId: B,
      }),
      { code: 'ATTACHMENT_NOT_FOUND' },
    )
    const none = await s.core.conductorClient.detachAccelerator({ uuid: fake.uuid, projectId: B })
    assert.deepEqual(none.detached, [])
    assert.deepEqual((await viewAs('a-manager', fake.uuid)).attached_to, [vm(1)])
  })

  void it('the API refuses on its own: a conductor that ignores projectId (built before issue 27) detaches nothing of A', async () => {
    const c = s.core.conductorClient
    const older: ConductorRpc = {
      ...c,
      detachAccelerator: ({ projectId: _, ...req }) => c.detachAccelerator(req),
    }
    const app = await createApp(
      { db: s.db.db, conductor: older, log: pino({ level: 'silent' }) },
      { auth },
    )
    try {
      const res = await app.inject({
        method: 'DELETE',
        url: `/v1/accelerators/${fake.uuid}?instance_uuid=${vm(1)}`,
        headers: { host: 'api.test', 'x-auth-token': 'b-manager' },
      })
      assert.equal(res.statusCode, 404, res.body)
      assert.match(fault(res), new RegExp(`no attachment to instance ${vm(1)}`))
      const all = await app.inject({
        method: 'DELETE',
        url: `/v1/accelerators/${fake.uuid}`,
        headers: { host: 'api.test', 'x-auth-token': 'b-manager' },
      })
      assert.equal(all.statusCode, 204, all.body)
    } finally {
      await app.close()
    }
    assert.deepEqual((await viewAs('a-manager', fake.uuid)).attached_to, [vm(1)])
  })

  void it("a driver uninstall refused for allocated devices names only the caller's requests", async () => {
    const arq = (await viewAs('a-manager', fake.uuid)).attachments[0]!.arq_uuid
    const refused = await as('b-manager', 'POST', '/v1/drivers/fake/uninstall', {
      hostname: 'node1',
    })
    assert.equal(refused.statusCode, 409, refused.body)
    assert.match(fault(refused), /1 accelerator request\(s\) of other projects/)
    assert.doesNotMatch(refused.body, new RegExp(`${vm(1)}|${arq}`))
    const own = await as('a-manager', 'POST', '/v1/drivers/fake/uninstall', { hostname: 'node1' })
    assert.equal(own.statusCode, 409, own.body)
    assert.match(fault(own), new RegExp(`${arq} Bound for instance ${vm(1)}`))
  })

  void it("an admin detaches any project's attachment", async () => {
    const res = await as(
      'b-admin',
      'DELETE',
      `/v1/accelerators/${fake.uuid}?instance_uuid=${vm(1)}`,
    )
    assert.equal(res.statusCode, 204, res.body)
    assert.deepEqual((await viewAs('a-manager', fake.uuid)).attached_to, [])
    assert.equal(
      (await as('a-manager', 'DELETE', `/v1/accelerators/${single.uuid}`)).statusCode,
      204,
    )
    assert.deepEqual((await viewAs('a-manager', single.uuid)).attached_to, [])
  })
})
