/**
 * What `cyborg db import-openstack` leaves out and refuses, from a MariaDB holding the recorded
 * 9.0.0 dump plus test/fixtures/openstack-cyborg/unmappable-rows.sql (one row per reason):
 * - the dry run counts every table and names every row it cannot map, with the reason, and writes
 *   nothing; the real run brings the rest in one transaction and prints the same;
 * - a target that holds rows is refused without --merge; with it, rows already there are left
 *   as they are, and a device our own agent created at the same control path wins;
 * - an unknown alembic revision, a database that is not Cyborg's, and a target not at our current
 *   schema are refused, naming why.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openDatabase } from '../../src/db/core/connection.js'
import { checkDatabase } from '../../src/db/core/db-check.js'
import { unmappedRows } from '../../src/domain/openstack-import/openstack-import.js'
import {
  importExitCode,
  renderImportReport,
  runOpenStackImport,
} from '../../src/main/commands/openstack-import.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { ingestSnapshot } from '../support/ingest.js'
import {
  DUMP_900,
  loadOpenStackCyborg,
  UNMAPPABLE,
  type OpenStackDatabase,
} from '../support/peers/openstack-cyborg.js'
import { createFakeDriver } from '../../src/drivers/fake/fake.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'

const dialects = await testDialects()
const [sqlite] = dialects
const maria = dialects.find((d) => d.name === 'mysql')!
const clock = { now: () => new Date('2026-11-26T12:00:00Z') }
const bad = (n: string) => `0badc0de-0000-4000-8000-000000000${n}`

/** The rows unmappable-rows.sql adds, each with the reason the import gives. */
const UNMAPPED = [
  [
    'devices',
    bad('002'),
    'it has no control path (OpenStack Cyborg leaves such a device out of its reports too)',
  ],
  ['devices', bad('003'), 'its control path eth0 is not a PCI address'],
  ['controlpath_ids', bad('202'), `its device ${bad('003')} is not brought over`],
  ['deployables', bad('102'), `its device ${bad('002')} is not brought over`],
  [
    'attributes',
    bad('303'),
    'key rc repeats on deployable 2f18ce46-c3c9-4acc-b2a6-a1d68b8e1c43 (attribute c764b384-0cb2-4aec-84ef-a47287da5256 has it)',
  ],
  ['attach_handles', bad('417'), 'its attach info 0000:0c:02.1 is not a JSON object of strings'],
  [
    'device_profiles',
    bad('504'),
    'group 0 key trait:HW_GPU_API_VULKAN: trait names must start with CUSTOM_',
  ],
  [
    'extended_accelerator_requests',
    bad('610'),
    `its device profile ${bad('504')} is not brought over`,
  ],
  ['extended_accelerator_requests', bad('611'), 'it is Bound but holds no attach handle'],
  [
    'extended_accelerator_requests',
    bad('612'),
    "its attach handle 09cc76a3-49fb-41de-969e-76aba07c9b37 is also request 5f23abc1-8938-4693-9bbc-e91bbd4919ce's",
  ],
  [
    'extended_accelerator_requests',
    bad('613'),
    `its attach handle ${bad('417')} is not brought over`,
  ],
]

const COUNTS = {
  devices: { source: 3, brought: 1, skipped: 2 },
  controlpath_ids: { source: 2, brought: 1, skipped: 1 },
  deployables: { source: 2, brought: 1, skipped: 1 },
  attributes: { source: 3, brought: 2, skipped: 1 },
  attach_handles: { source: 17, brought: 16, skipped: 1 },
  device_profiles: { source: 4, brought: 3, skipped: 1 },
  extended_accelerator_requests: { source: 13, brought: 9, skipped: 4 },
}

const TABLES = [
  'devices',
  'deployables',
  'attributes',
  'attach_handles',
  'device_profiles',
  'accelerator_requests',
  'device_identities',
] as const
async function rowCounts(db: TestDatabase): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const t of TABLES) {
    const r = await db.db
      .selectFrom(t)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    out[t] = Number(r.n)
  }
  return out
}

void describe('import-openstack: rows left out and refusals', { skip: maria.skip }, () => {
  let source: OpenStackDatabase
  let target: TestDatabase
  before(async () => {
    source = await loadOpenStackCyborg([DUMP_900, UNMAPPABLE])
    target = await sqlite!.create()
  })
  after(async () => {
    await target?.close()
    await source?.drop()
  })

  void it('the dry run counts every table and names every row it cannot map; it writes nothing', async () => {
    const report = await runOpenStackImport(target, { from: source.url, dryRun: true, clock })
    assert.deepEqual(report.plan.counts, COUNTS)
    assert.deepEqual(
      unmappedRows(report.plan).map((s) => [s.table, s.uuid, s.reason]),
      UNMAPPED,
    )
    assert.equal(importExitCode(report), 2)
    const text = renderImportReport(report)
    assert.match(text, /\(dry run: nothing written\)/)
    assert.match(text, /^extended_accelerator_requests\s+13\s+9\s+4$/m)
    for (const [table, uuid, reason] of UNMAPPED)
      assert.ok(text.includes(`  ${table} ${uuid}: ${reason}\n`))
    assert.match(text, /16 attach handle\(s\) written with PCI fields in our drivers' form/)
    assert.match(text, /would bring 33 row\(s\); 11 could not be mapped/)
    assert.deepEqual(Object.values(await rowCounts(target)), [0, 0, 0, 0, 0, 0, 0])
  })

  void it('the real run brings the rest, consistent, and prints the same', async () => {
    const report = await runOpenStackImport(target, { from: source.url, clock })
    assert.deepEqual(report.plan.counts, COUNTS)
    assert.equal(unmappedRows(report.plan).length, UNMAPPED.length)
    assert.match(renderImportReport(report), /^brought 33 row\(s\); 11 could not be mapped$/m)
    assert.deepEqual(await rowCounts(target), {
      devices: 1,
      deployables: 1,
      attributes: 2,
      attach_handles: 16,
      device_profiles: 3,
      accelerator_requests: 9,
      device_identities: 1,
    })
    assert.deepEqual(await checkDatabase(target.db), [])
  })

  void it('refuses a target that holds rows unless --merge, which leaves them as they are', async () => {
    const before = await rowCounts(target)
    await assert.rejects(runOpenStackImport(target, { from: source.url, clock }), (err: Error) => {
      assert.equal((err as { code?: string }).code, 'IMPORT_TARGET_NOT_EMPTY')
      assert.match(
        err.message,
        /already holds devices, device profiles or accelerator requests.*--merge/,
      )
      return true
    })
    const merged = await runOpenStackImport(target, { from: source.url, merge: true, clock })
    assert.equal(merged.plan.devices.length + merged.plan.arqs.length, 0)
    assert.equal(merged.plan.skipped.filter((s) => s.present).length, 1 + 1 + 1 + 2 + 16 + 3 + 9)
    assert.ok(
      merged.plan.skipped
        .filter((s) => s.present && s.table !== 'controlpath_ids')
        .every((s) => s.reason === 'already in the target'),
    )
    assert.match(renderImportReport(merged), /already in the target, left as they are \(33\):/)
    assert.deepEqual(await rowCounts(target), before)
  })

  void it('with --merge, a device our agent already created at the same control path wins', async () => {
    const fresh = await sqlite!.create()
    try {
      const devices = await createFakeDriver({
        hostname: 'vm',
        host: createFixtureHostProbe('/nonexistent'),
      }).discover()
      await ingestSnapshot(
        fresh.db,
        { host: 'vm', hash: inventoryHash(devices), devices },
        { autoActivate: true, now: '2026-11-26T00:00:00.000000+00:00' },
      )
      const ours = await fresh.db.selectFrom('devices').select('uuid').executeTakeFirstOrThrow()
      const report = await runOpenStackImport(fresh, { from: source.url, merge: true, clock })
      const reasons = new Map(unmappedRows(report.plan).map((s) => [s.uuid, s.reason]))
      assert.equal(
        reasons.get('25724ec6-3ede-4cba-9065-37667c840b77'),
        `its control path {"bus":"0c","device":"00","domain":"0000","function":"0"} on host vm is device ${ours.uuid}'s in the target`,
      )
      // Its bound requests cannot come (their handles are not brought over); the others and the profiles can.
      assert.equal(
        reasons.get('5f23abc1-8938-4693-9bbc-e91bbd4919ce'),
        'its attach handle 09cc76a3-49fb-41de-969e-76aba07c9b37 is not brought over',
      )
      assert.equal(report.plan.deviceProfiles.length, 3)
      assert.deepEqual(report.plan.arqs.map((a) => a.state).sort(), [
        'BindFailed',
        'Initial',
        'Initial',
        'Unbound',
      ])
      assert.deepEqual(await checkDatabase(fresh.db), [])
    } finally {
      await fresh.close()
    }
  })

  void it('refuses a target not at our current schema', async () => {
    const bare = await openDatabase('sqlite://')
    try {
      await assert.rejects(
        runOpenStackImport(bare, { from: source.url, clock }),
        /is not at the current schema \(pending: 0001-initial, .*\): run cyborg db sync first/,
      )
    } finally {
      await bare.close()
    }
  })

  void it('refuses an unknown revision, naming it and the supported ones, and a database that is not Cyborg’s', async () => {
    const empty = await sqlite!.create()
    try {
      await source.run(`UPDATE alembic_version SET version_num = '1f2e3d4c5b6a'`)
      await assert.rejects(runOpenStackImport(empty, { from: source.url, clock }), (err: Error) => {
        assert.equal((err as { code?: string }).code, 'OPENSTACK_REVISION_UNSUPPORTED')
        assert.equal(
          err.message,
          'OpenStack Cyborg schema revision 1f2e3d4c5b6a is not supported; supported: 4cc1d79978fc ' +
            '(9.0.0 (Zed) and 10.x (2023.1)), 6c77bd6afea5 (11.0.0 (2023.2) to 16.x (2026.1)), ' +
            '9625668549b5 (2026.2 development, before 17.0.0), a35b4295a0e5 (2026.2 development, ' +
            'before 17.0.0), b47c8f2d1e3a (17.0.0 (2026.2)). An older Cyborg: upgrade its database ' +
            "to one of these first (cyborg-dbsync upgrade); a newer one's schema is not known to " +
            'this import',
        )
        return true
      })
      await source.run('DROP TABLE alembic_version')
      await assert.rejects(
        runOpenStackImport(empty, { from: source.url, clock }),
        /is not an OpenStack Cyborg database: it has no table alembic_version/,
      )
      assert.deepEqual(Object.values(await rowCounts(empty)), [0, 0, 0, 0, 0, 0, 0])
    } finally {
      await empty.close()
    }
  })
})
