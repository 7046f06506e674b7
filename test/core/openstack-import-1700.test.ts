/**
 * `cyborg db import-openstack` from an OpenStack Cyborg 17.0.0 database (alembic b47c8f2d1e3a) in
 * MariaDB: the recorded 9.0.0 dump brought to 17.0.0 by b47c8f2d1e3a-cyborg-17.0.0.sql (upstream's
 * migrations and its online data migrations), plus 17.0.0-device-states.sql (devices of the new
 * types in the new states; test/fixtures/openstack-cyborg/README.md). The dry run names the schema,
 * counts every table, notes what was mapped and writes nothing; the real run writes NVME and MDEV
 * devices as SSD and PCI, units of a device being cleaned as cleaning, a device in error fenced,
 * and each request's backfilled project.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { listCleaningUnits } from '../../src/db/cleaning.js'
import { checkDatabase } from '../../src/db/core/db-check.js'
import { IMPORTED_ERROR_REASON } from '../../src/domain/openstack-import/openstack-import-device-state.js'
import { unmappedRows } from '../../src/domain/openstack-import/openstack-import.js'
import {
  importExitCode,
  renderImportReport,
  runOpenStackImport,
} from '../../src/main/commands/openstack-import.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import {
  BACKFILLED_1700,
  CYBORG_1700,
  DEVICE_STATES_1700,
  DUMP_900,
  loadOpenStackCyborg,
  type OpenStackDatabase,
} from '../support/peers/openstack-cyborg.js'

const dialects = await testDialects()
const [sqlite] = dialects
const maria = dialects.find((d) => d.name === 'mysql')!
const clock = { now: () => new Date('2026-11-26T12:00:00Z') }
const R = (n: number) => `17000000-0000-4000-8000-000000000${n}`
const RECORDED_DEVICE = '25724ec6-3ede-4cba-9065-37667c840b77'

const COUNTS = {
  devices: { source: 4, brought: 4, skipped: 0 },
  controlpath_ids: { source: 4, brought: 4, skipped: 0 },
  deployables: { source: 4, brought: 4, skipped: 0 },
  attributes: { source: 2, brought: 2, skipped: 0 },
  attach_handles: { source: 20, brought: 20, skipped: 0 },
  device_profiles: { source: 3, brought: 3, skipped: 0 },
  extended_accelerator_requests: { source: 9, brought: 9, skipped: 0 },
}

void describe(
  'import of OpenStack Cyborg 17.0.0 (alembic b47c8f2d1e3a)',
  { skip: maria.skip },
  () => {
    let source: OpenStackDatabase
    let target: TestDatabase
    before(async () => {
      source = await loadOpenStackCyborg([DUMP_900, CYBORG_1700, DEVICE_STATES_1700])
      target = await sqlite!.create()
    })
    after(async () => {
      await target?.close()
      await source?.drop()
    })

    void it('the dry run names the schema, counts every table, notes every mapping and writes nothing', async () => {
      const report = await runOpenStackImport(target, { from: source.url, dryRun: true, clock })
      assert.equal(report.plan.revision.revision, 'b47c8f2d1e3a')
      assert.deepEqual(report.plan.counts, COUNTS)
      assert.deepEqual(unmappedRows(report.plan), [])
      assert.equal(importExitCode(report), 0)
      const text = renderImportReport(report)
      assert.match(text, /\(OpenStack Cyborg schema b47c8f2d1e3a: 17\.0\.0 \(2026\.2\)\)/)
      assert.match(text, /\(dry run: nothing written\)/)
      for (const note of [
        `1 device(s) of OpenStack Cyborg's type NVME written as SSD, e.g. ${R(202)}`,
        `1 device(s) of OpenStack Cyborg's type MDEV written as PCI, e.g. ${R(203)}`,
        `device ${R(202)} was cleaning in OpenStack Cyborg: 1 unit(s) no request holds written cleaning`,
        `device ${R(203)} was error in OpenStack Cyborg: 2 unit(s) no request holds written with a failed clean`,
        `device ${R(204)} was pending_cleaning in OpenStack Cyborg: 1 unit(s) no request holds written cleaning`,
      ])
        assert.ok(text.includes(`  ${note}`), note)
      assert.match(text, /would bring 46 row\(s\); 0 could not be mapped/)
      const n = await target.db
        .selectFrom('devices')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
      assert.equal(Number(n.n), 0)
    })

    void it('the real run writes the new types, the cleaning units, the fenced device and the projects', async () => {
      const report = await runOpenStackImport(target, { from: source.url, clock })
      assert.deepEqual(report.plan.counts, COUNTS)
      const devices = await target.db
        .selectFrom('devices')
        .select(['uuid', 'type', 'health', 'health_reason'])
        .orderBy('uuid')
        .execute()
      assert.deepEqual(
        devices.map((d) => [d.uuid, d.type, d.health, d.health_reason]),
        [
          [R(202), 'SSD', 'ok', null],
          [R(203), 'PCI', 'failed', IMPORTED_ERROR_REASON],
          [R(204), 'PCI', 'ok', null],
          // Backfilled `allocated` (five units in use): as it was.
          [RECORDED_DEVICE, 'FPGA', 'ok', null],
        ],
      )
      const cleaning = await listCleaningUnits(target.db)
      assert.deepEqual(
        cleaning.map((u) => [u.handleUuid, u.state, u.deviceUuid, u.allocationUuid]),
        [
          [R(517), 'pending', R(202), null],
          [R(518), 'failed', R(203), null],
          [R(519), 'failed', R(203), null],
          [R(520), 'pending', R(204), null],
        ],
      )
      const arqs = await target.db
        .selectFrom('accelerator_requests')
        .select(['uuid', 'project_id'])
        .execute()
      const projects = Object.fromEntries(arqs.map((a) => [a.uuid, a.project_id]))
      for (const [uuid, { project_id }] of Object.entries(BACKFILLED_1700))
        assert.equal(projects[uuid], project_id, uuid)
      // Requests with no instance stay without a project (upstream's backfill cannot heal them).
      assert.equal(arqs.filter((a) => a.project_id === null).length, 3)
      assert.deepEqual(await checkDatabase(target.db), [])
    })
  },
)
