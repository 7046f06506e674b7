/**
 * `POST /v2/device_profiles/{name_or_uuid}/explain` (2.6) over a crafted fleet in which every
 * rule fires, the same rule named by a failed standalone bind, and `cyborg explain` printing it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { fault, startStack, type Stack } from './stack.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { cyborg } from '../support/cli.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { updateHeartbeat } from '../../src/db/service-rows.js'
import { createApp } from '../../src/api/app.js'
import { freezeContext } from '../../src/domain/request-context.js'

interface Candidate {
  deployable_name: string
  hostname: string
  rule: string
  reason: string
  free_units: number
}
interface Group {
  group_id: number
  resource_class: string
  fits: number
  candidates: Candidate[]
}

const GROUPS: Record<string, string>[] = [
  { 'resources:PGPU': '1', 'trait:CUSTOM_GPU_NVIDIA': 'required' },
  { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'forbidden' },
  { 'resources:PGPU': '1', 'trait:CUSTOM_MISSING': 'required' },
]

void describe('explain', () => {
  let s: Stack
  const report = async (host: string, ns: number[]) => {
    const devices = ns.map((n) => sampleDevice(host, n))
    const hash = inventoryHash(devices)
    await s.core.conductorClient.reportInventory({ host, hash, devices, autoActivate: true })
  }
  /** Sets a column of the device behind deployable `name` (a crafted state). */
  const setDevice = async (name: string, set: Record<string, string>) => {
    const d = await s.db.db
      .selectFrom('deployables')
      .select(['id', 'device_id'])
      .where('name', '=', name)
      .executeTakeFirstOrThrow()
    if (Object.keys(set).length > 0)
      await s.db.db.updateTable('devices').set(set).where('id', '=', d.device_id).execute()
    return d.id
  }
  const explain = (profile: string, body?: unknown, version = '2.6') =>
    s.request({
      method: 'POST',
      url: `/v2/device_profiles/${profile}/explain`,
      version,
      ...(body === undefined ? {} : { payload: body as object }),
    })

  before(async () => {
    s = await startStack()
    // node3: GPUs 0, 2, 4, 6, 8 and 10, each in a state that one rule rules out; 8 fits.
    await report('node3', [0, 2, 4, 6, 8, 10])
    await setDevice('node3_0000:10:00.0', { status: 'maintaining' })
    await setDevice('node3_0000:12:00.0', {
      health: 'failed',
      health_reason: '2 uncorrectable ECC errors',
    })
    const gone = await setDevice('node3_0000:14:00.0', {})
    await s.db.db
      .updateTable('deployables')
      .set({ removal_pending: 1 })
      .where('id', '=', gone)
      .execute()
    const full = await setDevice('node3_0000:16:00.0', {})
    await s.db.db
      .updateTable('attach_handles')
      .set({ in_use: 1 })
      .where('deployable_id', '=', full)
      .execute()
    await setDevice('node3_0000:1a:00.0', { lifecycle: 'inactive' })
    // node4: its agent beat long ago.
    await report('node4', [0])
    await updateHeartbeat(
      s.db.db,
      { host: 'node4', binary: 'cyborg-agent', version: '1' },
      '2000-01-01T00:00:00.000000+00:00',
    )
    await s.core.conductorClient.createDeviceProfile({
      name: 'mix',
      description: null,
      groups: GROUPS,
    })
  })
  after(() => s?.close())

  void it('names the first rule that rules out each deployable of a host, fits first', async () => {
    const res = await explain('mix', { hostname: 'node3' })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json() as {
      device_profile: { name: string }
      hostname: string
      groups: Group[]
    }
    assert.equal(body.device_profile.name, 'mix')
    assert.equal(body.hostname, 'node3')
    const g0 = body.groups[0]!
    assert.deepEqual([g0.group_id, g0.resource_class, g0.fits], [0, 'PGPU', 1])
    assert.deepEqual(
      g0.candidates.map((c) => [c.deployable_name, c.rule, c.free_units]),
      [
        ['node3_0000:18:00.0', 'fits', 2],
        ['node3_0000:1a:00.0', 'lifecycle', 2],
        ['node3_0000:10:00.0', 'status', 2],
        ['node3_0000:12:00.0', 'health', 2],
        ['node3_0000:14:00.0', 'removal_pending', 2],
        ['node3_0000:16:00.0', 'no_free_handle', 0],
      ],
    )
    const reason = (name: string) => g0.candidates.find((c) => c.deployable_name === name)!.reason
    assert.equal(
      reason('node3_0000:1a:00.0'),
      'node3_0000:1a:00.0 is inactive (lifecycle); mark it ready first',
    )
    assert.match(reason('node3_0000:12:00.0'), /health failed: 2 uncorrectable ECC errors/)
    assert.deepEqual(
      body.groups[1]!.candidates.map((c) => c.rule),
      Array(6).fill('resource_class'),
    )
    assert.deepEqual(
      body.groups[2]!.candidates.map((c) => c.rule),
      Array(6).fill('required_trait'),
    )
  })

  void it('over the fleet, every rule but quota appears', async () => {
    const res = await explain('mix')
    assert.equal(res.statusCode, 200, res.body)
    const groups = (res.json() as { hostname: null; groups: Group[] }).groups
    const rules = new Set(groups.flatMap((g) => g.candidates.map((c) => c.rule)))
    assert.deepEqual([...rules].sort(), [
      'fits',
      'forbidden_trait',
      'health',
      'lease',
      'lifecycle',
      'no_free_handle',
      'removal_pending',
      'required_trait',
      'resource_class',
      'status',
    ])
    const lease = groups[0]!.candidates.find((c) => c.hostname === 'node4')!
    assert.match(
      lease.reason,
      /^agent cyborg-agent@node4 silent since 2000-01-01T00:00:00\.000000\+00:00 \(lease\)/,
    )
    const forbidden = groups[1]!.candidates.find((c) => c.rule === 'forbidden_trait')!
    assert.match(
      forbidden.reason,
      /^CUSTOM_FPGA_INTEL is forbidden by the group \(forbidden_trait\)/,
    )
    const fake = groups[0]!.candidates.find((c) => c.hostname === 'node1')!
    assert.equal(fake.rule, 'resource_class')
  })

  void it('needs 2.6; names the field of a bad body and the unknown profile', async () => {
    const old = await explain('mix', {}, '2.5')
    assert.equal(old.statusCode, 404)
    assert.match(fault(old), /needs microversion 2\.6/)
    const bad = await explain('mix', { hostname: 5 })
    assert.equal(bad.statusCode, 400)
    assert.match(fault(bad), /field 'hostname'/)
    const unknown = await explain('mix', { hostname: 'node3', quota: 1 })
    assert.equal(unknown.statusCode, 400)
    assert.match(fault(unknown), /field 'quota'/)
    const list = await explain('mix', [])
    assert.equal(list.statusCode, 400)
    assert.match(fault(list), /field 'body'/)
    const missing = await explain('nope')
    assert.equal(missing.statusCode, 404)
    assert.match(fault(missing), /nope/)
    const none = await explain('mix', { hostname: 'elsewhere', project_id: 'p' })
    assert.equal(none.statusCode, 200)
    assert.deepEqual(
      (none.json() as { groups: Group[] }).groups.map((g) => g.candidates),
      [[], [], []],
    )
  })

  void it('a failed standalone bind names the rule that stopped the best candidate', async () => {
    await s.core.conductorClient.createDeviceProfile({
      name: 'one-gpu',
      description: null,
      groups: [GROUPS[0]!],
    })
    await report('node5', [0])
    await setDevice('node5_0000:10:00.0', { lifecycle: 'inactive' })
    const [arq] = await s.core.conductorClient.createArqs({
      deviceProfileName: 'one-gpu',
      projectId: null,
      maxArqs: 8,
    })
    const [out] = await s.core.conductorClient.bindArqs({
      bindings: {
        [arq!.uuid]: { hostname: 'node5', instanceUuid: '00000000-0000-4000-8000-0000000000e1' },
      },
    })
    assert.equal(out!.state, 'BindFailed')
    assert.equal(
      out!.reason,
      'no fit on node5: node5_0000:10:00.0 is inactive (lifecycle); mark it ready first',
    )
  })

  void it('a non-admin may explain only for its own project, with quota on or off (403 naming project_id)', async () => {
    const member = freezeContext({
      userId: 'u-b',
      projectId: 'project-b',
      roles: ['member', 'reader'],
      isAdmin: false,
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    })
    const auth = { strategy: 'keystone' as const, authenticate: () => member }
    const deps = { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) }
    const quota = { limitsOf: () => Promise.resolve(new Map()) }
    for (const [mode, options] of [
      ['noop', { auth }],
      ['unified_limits', { auth, quota }],
    ] as const) {
      const app = await createApp(deps, options)
      try {
        const ask = (body: unknown) =>
          app.inject({
            method: 'POST',
            url: '/v2/device_profiles/mix/explain',
            headers: { host: 'api.test', 'openstack-api-version': 'accelerator 2.6' },
            payload: body as object,
          })
        const other = await ask({ hostname: 'node3', project_id: 'project-a' })
        assert.equal(other.statusCode, 403, `${mode}: ${other.body}`)
        assert.match(fault(other), /project_id/, mode)
        assert.match(fault(other), /project-a/, mode)
        for (const body of [
          { hostname: 'node3', project_id: 'project-b' },
          { hostname: 'node3' },
        ]) {
          const own = await ask(body)
          assert.equal(own.statusCode, 200, `${mode}: ${own.body}`)
          assert.equal(own.json().project_id, 'project-b')
        }
      } finally {
        await app.close()
      }
    }
  })

  void it('cyborg explain prints a table per group', async () => {
    const url = await s.app.listen({ host: '127.0.0.1', port: 0 })
    const run = await cyborg(['explain', 'mix', '--host', 'node3'], { CYBORG_URL: url })
    assert.equal(run.code, 0, run.stderr)
    assert.match(run.stdout, /^device profile mix on node3\n/)
    assert.match(run.stdout, /group 0: PGPU, requires CUSTOM_GPU_NVIDIA: 1 of 6 fit\n/)
    assert.match(run.stdout, /group 1: FPGA, forbids CUSTOM_FPGA_INTEL: 0 of 6 fit\n/)
    assert.match(run.stdout, /node3_0000:16:00.0\s+node3\s+no_free_handle\s+no free attach handle/)
    const json = await cyborg(['explain', 'mix', '--format', 'json'], { CYBORG_URL: url })
    assert.equal(json.code, 0, json.stderr)
    assert.equal((JSON.parse(json.stdout) as { groups: Group[] }).groups.length, 3)
  })
})
