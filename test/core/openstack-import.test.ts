/**
 * `cyborg db import-openstack` (docs/migrate-from-openstack-cyborg.md) from a real OpenStack Cyborg
 * database in MariaDB: the recorded 9.0.0 dump, the same with revision 6c77bd6afea5 applied, and
 * the same brought to 17.0.0 (b47c8f2d1e3a, backfilled) (test/fixtures/openstack-cyborg/); and its rows copied into OpenStack Cyborg's tables on
 * PostgreSQL (a `postgresql://` source). Each into a fresh target on every dialect. Then:
 * - our v2 API shows every request, profile, device and deployable that OpenStack Cyborg's showed
 *   (expected.json), with the same uuids and the fields Nova reads; `db check` finds nothing;
 * - the first report of our agent (startCore, fake driver, host `vm`) reconciles the imported rows
 *   with the hardware: one device, the same uuids, every bound request keeps its handle; a free
 *   request binds to a unit nobody holds.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { checkDatabase } from '../../src/db/core/db-check.js'
import { unmappedRows } from '../../src/domain/openstack-import/openstack-import.js'
import { startCore, type Core } from '../../src/main/core.js'
import { runOpenStackImport } from '../../src/main/commands/openstack-import.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import {
  BACKFILLED_1700,
  CYBORG_1700,
  DUMP_900,
  EXPECTED,
  LATER_6C77,
  loadOpenStackCyborg,
  loadOpenStackCyborgOnPostgres,
  ourTimestamp,
  paddedInfo,
  type OpenStackDatabase,
} from '../support/peers/openstack-cyborg.js'

const dialects = await testDialects()
const maria = dialects.find((d) => d.name === 'mysql')!
const clock = { now: () => new Date('2026-11-26T12:00:00Z') }
const RP = '823f5e9e-ef5b-3461-bd09-8006cc3755d1'
const DEVICE = EXPECTED.devices[0]!.uuid

const postgres = dialects.find((d) => d.name === 'postgres')!
const CASES = [
  {
    name: '9.0.0 (alembic 4cc1d79978fc)',
    load: () => loadOpenStackCyborg([DUMP_900]),
    skip: maria.skip,
    revision: '4cc1d79978fc',
    status: 'enabled',
  },
  {
    name: 'revision 6c77bd6afea5',
    load: () => loadOpenStackCyborg([DUMP_900, LATER_6C77]),
    skip: maria.skip,
    revision: '6c77bd6afea5',
    status: 'maintaining',
  },
  {
    name: '17.0.0 (alembic b47c8f2d1e3a, backfilled)',
    load: () => loadOpenStackCyborg([DUMP_900, CYBORG_1700]),
    skip: maria.skip,
    revision: 'b47c8f2d1e3a',
    status: 'enabled',
    backfilled: BACKFILLED_1700,
  },
  {
    name: '9.0.0 rows on PostgreSQL',
    load: () => loadOpenStackCyborgOnPostgres([DUMP_900]),
    skip: maria.skip ?? postgres.skip,
    revision: '4cc1d79978fc',
    status: 'enabled',
  },
]

type Body = Record<string, unknown>
async function get(app: FastifyInstance, url: string, version = '2.4'): Promise<Body> {
  const res = await app.inject({
    url,
    headers: { host: 'api.test', 'openstack-api-version': `accelerator ${version}` },
  })
  assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
  return res.json() as Body
}
const list = async (app: FastifyInstance, url: string, key: string) =>
  (await get(app, url))[key] as Body[]

/**
 * Every request of expected.json, as our API shows it: the fields Nova and the CLI read (with the
 * project and `updated_at` that upstream's backfill gave some, `backfilled`).
 */
async function checkRequests(
  app: FastifyInstance,
  backfilled: typeof BACKFILLED_1700 = {},
): Promise<Body[]> {
  const arqs = await list(app, '/v2/accelerator_requests', 'arqs')
  assert.equal(arqs.length, EXPECTED.accelerator_requests.length)
  for (const recorded of EXPECTED.accelerator_requests) {
    const want = { ...recorded, ...backfilled[recorded.uuid] }
    const got = arqs.find((a) => a.uuid === want.uuid)
    assert.ok(got, `request ${want.uuid} is missing`)
    const bound = want.state === 'Bound'
    assert.deepEqual(
      {
        state: got.state,
        device_profile_name: got.device_profile_name,
        device_profile_group_id: got.device_profile_group_id,
        hostname: got.hostname,
        device_rp_uuid: got.device_rp_uuid,
        instance_uuid: got.instance_uuid,
        project_id: got.project_id,
        attach_handle_type: got.attach_handle_type,
        attach_handle_info: got.attach_handle_info,
        attach_handle_uuid: got.attach_handle_uuid,
        created_at: got.created_at,
        updated_at: got.updated_at,
      },
      {
        state: want.state,
        device_profile_name: want.device_profile_name,
        device_profile_group_id: want.device_profile_group_id,
        hostname: want.hostname,
        device_rp_uuid: want.device_rp_uuid,
        instance_uuid: want.instance_uuid,
        project_id: want.project_id,
        attach_handle_type: want.attach_handle_type,
        // The same PCI address, zero-padded as our fake driver reports it ("0" → "00").
        attach_handle_info: bound ? paddedInfo(want.attach_handle_info) : {},
        attach_handle_uuid: bound ? want.from_database.attach_handle!.uuid : null,
        created_at: ourTimestamp(want.created_at),
        updated_at: want.updated_at === null ? null : ourTimestamp(want.updated_at),
      },
      `request ${want.uuid}`,
    )
  }
  // Nova's view: an instance's requests, all resolved.
  for (const { instance_uuid, arqs: uuids } of EXPECTED.instances) {
    const resolved = await list(
      app,
      `/v2/accelerator_requests?instance=${instance_uuid}&bind_state=resolved`,
      'arqs',
    )
    assert.deepEqual(resolved.map((a) => a.uuid).sort(), [...uuids].sort())
  }
  return arqs
}

async function checkInventory(app: FastifyInstance, status: string): Promise<void> {
  const profiles = await list(app, '/v2/device_profiles', 'device_profiles')
  assert.deepEqual(
    profiles.map(({ uuid, name, description, groups }) => ({ uuid, name, description, groups })),
    EXPECTED.device_profiles.map(({ uuid, name, description, groups }) => ({
      uuid,
      name,
      description,
      groups,
    })),
  )
  const devices = await list(app, '/v2/devices', 'devices')
  assert.deepEqual(
    devices.map(({ uuid, type, vendor, model, hostname, status, lifecycle }) => ({
      uuid,
      type,
      vendor,
      model,
      hostname,
      status,
      lifecycle,
    })),
    EXPECTED.devices.map(({ uuid, type, vendor, model, hostname }) => ({
      uuid,
      type,
      vendor,
      model,
      hostname,
      status,
      lifecycle: 'active',
    })),
  )
  const deployables = await list(app, '/v2/deployables', 'deployables')
  assert.deepEqual(
    deployables.map(({ uuid, name, rp_uuid, num_accelerators }) => ({
      uuid,
      name,
      rp_uuid,
      num_accelerators,
    })),
    EXPECTED.deployables.map(({ uuid, name, rp_uuid, num_accelerators }) => ({
      uuid,
      name,
      rp_uuid,
      num_accelerators,
    })),
  )
}

async function handles(db: TestDatabase) {
  return db.db
    .selectFrom('attach_handles')
    .select(['uuid', 'in_use', 'attach_info'])
    .orderBy('uuid')
    .execute()
}

for (const c of CASES) {
  void describe(`import of OpenStack Cyborg ${c.name}`, { skip: c.skip }, () => {
    let source: OpenStackDatabase
    before(async () => {
      source = await c.load()
    })
    after(async () => {
      await source?.drop()
    })
    for (const dialect of dialects) {
      void it(
        `into ${dialect.name}: the API shows what OpenStack Cyborg showed, and the first agent report keeps it`,
        { skip: dialect.skip },
        async () => {
          const target = await dialect.create()
          const bus = createInProcessBus()
          const log = pino({ level: 'silent' })
          const cores: Core[] = []
          let app: FastifyInstance | undefined
          try {
            const report = await runOpenStackImport(target, { from: source.url, clock })
            assert.equal(report.plan.revision.revision, c.revision)
            assert.deepEqual(unmappedRows(report.plan), [])
            assert.deepEqual(report.plan.counts.extended_accelerator_requests, {
              source: 9,
              brought: 9,
              skipped: 0,
            })
            assert.deepEqual(await checkDatabase(target.db), [])
            const identities = await target.db.selectFrom('device_identities').selectAll().execute()
            assert.deepEqual(
              identities.map((i) => [i.hostname, i.identity_key, i.device_uuid]),
              [['vm', 'path:{"bus":"0c","device":"00","domain":"0000","function":"0"}', DEVICE]],
            )

            cores.push(await startCore({ db: target, bus, log, conductor: { saveIntervalMs: 1 } }))
            app = await createApp({ db: target.db, conductor: cores[0]!.conductorClient, log })
            const before = await checkRequests(app, c.backfilled)
            await checkInventory(app, c.status)
            const handlesBefore = await handles(target)
            assert.deepEqual(
              handlesBefore.map((h) => [h.uuid, Number(h.in_use) === 1]),
              EXPECTED.attach_handles
                .map((h) => [h.uuid, h.in_use] as const)
                .sort((a, b) => a[0].localeCompare(b[0])),
            )

            // Our agent on host vm: the fake driver reports the same device, deployable and units.
            const agentCore = await startCore({
              bus,
              log,
              conductor: false,
              agent: { host: 'vm', enabledDrivers: ['fake'], periodicIntervalMs: 3_600_000 },
            })
            cores.push(agentCore)
            await agentCore.agent!.discoverNow()
            const devices = await list(app, '/v2/devices', 'devices')
            assert.deepEqual(
              devices.map((d) => [d.uuid, d.status, d.lifecycle]),
              [[DEVICE, c.status, 'active']],
            )
            const [dep] = await list(app, '/v2/deployables', 'deployables')
            assert.equal(dep!.uuid, EXPECTED.deployables[0]!.uuid)
            assert.equal(dep!.rp_uuid, RP)
            // The report was applied: the fake driver's trait key replaced OpenStack's.
            assert.match(String(dep!.attributes_list), /"trait0": "CUSTOM_FAKE_DEVICE"/)
            assert.deepEqual(await handles(target), handlesBefore)
            assert.deepEqual(await checkRequests(app, c.backfilled), before)
            assert.deepEqual(await checkDatabase(target.db), [])

            if (c.status === 'enabled') {
              // A free request binds to a unit that no imported request holds.
              const arq = 'd7b09ddf-8092-41c2-8928-56394602a782'
              const instance = '0badc0de-0000-4000-8000-0000000000aa'
              const res = await app.inject({
                method: 'PATCH',
                url: '/v2/accelerator_requests',
                headers: { host: 'api.test', 'content-type': 'application/json' },
                payload: JSON.stringify({
                  [arq]: [
                    { path: '/hostname', op: 'add', value: 'vm' },
                    { path: '/device_rp_uuid', op: 'add', value: RP },
                    { path: '/instance_uuid', op: 'add', value: instance },
                  ],
                }),
              })
              assert.equal(res.statusCode, 202, res.body)
              const bound = await get(app, `/v2/accelerator_requests/${arq}`)
              assert.equal(bound.state, 'Bound')
              const held = handlesBefore.filter((h) => Number(h.in_use) === 1).map((h) => h.uuid)
              assert.ok(!held.includes(String(bound.attach_handle_uuid)), 'a free unit')
            }
          } finally {
            await app?.close()
            for (const core of cores.reverse()) await core.stop()
            await bus.close()
            await target.close()
          }
        },
      )
    }
  })
}
