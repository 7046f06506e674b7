/**
 * The plan of an OpenStack Cyborg 17.0.0 database (alembic b47c8f2d1e3a) on hand-made snapshots:
 * the revisions after 6c77bd6afea5 are known, MDEV and NVME devices come as PCI and SSD, and
 * `device_state` becomes our units' cleaning state and the device's health.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  openStackRevision,
  type OpenStackSnapshot,
  type OsAttachHandle,
  type OsDevice,
} from './openstack-cyborg.js'
import { IMPORTED_ERROR_REASON } from './openstack-import-device-state.js'
import { planImport, unmappedRows } from './openstack-import.js'
import { emptyTargetIndex } from './openstack-import-plan.js'

const NOW = '2026-11-26T12:00:00.000000+00:00'
const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const stamps = (id: number, uuid = U(id)) => ({
  id,
  uuid,
  createdAt: '2026-01-02 03:04:05',
  updatedAt: null,
})

/** Device `id` of `type` in `deviceState`, at PCI function `id`, with one deployable of `units` handles. */
function device(id: number, type: string, deviceState: string | null, units: boolean[]) {
  const dev: OsDevice = {
    ...stamps(id),
    type,
    vendor: '8086',
    model: '0a54',
    stdBoardInfo: null,
    vendorBoardInfo: null,
    hostname: 'h',
    status: 'enabled',
    deviceState,
  }
  const handles: OsAttachHandle[] = units.map((inUse, i) => ({
    ...stamps(id * 10 + i, U(400 + id * 10 + i)),
    deployableId: id,
    cpidId: id,
    inUse,
    attachType: 'PCI',
    attachInfo: `{"domain": "0000", "bus": "5e", "device": "0${i}", "function": "${id}"}`,
  }))
  return {
    dev,
    cpid: {
      ...stamps(id, U(100 + id)),
      deviceId: id,
      cpidType: 'PCI',
      cpidInfo: `{"domain": "0000", "bus": "5e", "device": "00", "function": "${id}"}`,
    },
    dep: {
      ...stamps(id, U(200 + id)),
      parentId: null,
      rootId: null,
      name: `h_0000:5e:00.${id}`,
      numAccelerators: units.length,
      deviceId: id,
      rpUuid: U(900 + id),
      driverName: 'x',
      bitstreamId: null,
    },
    handles,
  }
}

function snapshot(devices: ReturnType<typeof device>[]): OpenStackSnapshot {
  return {
    revision: openStackRevision(['b47c8f2d1e3a']),
    devices: devices.map((d) => d.dev),
    controlPaths: devices.map((d) => d.cpid),
    deployables: devices.map((d) => d.dep),
    attributes: [],
    attachHandles: devices.flatMap((d) => d.handles),
    deviceProfiles: [
      {
        ...stamps(1, U(501)),
        name: 'p',
        profileJson: '{"groups": [{"resources:CUSTOM_NVME": "1"}]}',
        description: null,
      },
    ],
    // Device 1's first unit is held by a Bound request.
    arqs: [
      {
        ...stamps(1, U(601)),
        projectId: 'p1',
        state: 'Bound',
        deviceProfileId: 1,
        deviceProfileGroupId: 0,
        hostname: 'h',
        deviceRpUuid: U(901),
        instanceUuid: U(701),
        attachHandleId: 10,
        deployableId: 1,
      },
    ],
  }
}

void describe('import of an OpenStack Cyborg 17.0.0 database (plan)', () => {
  void it('knows every revision from 6c77bd6afea5 to 17.0.0 and refuses others, naming them', () => {
    for (const r of ['9625668549b5', 'a35b4295a0e5'])
      assert.equal(openStackRevision([r]).deviceState, false)
    const head = openStackRevision(['b47c8f2d1e3a'])
    assert.deepEqual(
      [head.deviceStatus, head.deviceState, head.releases],
      [true, true, '17.0.0 (2026.2)'],
    )
    assert.throws(
      () => openStackRevision(['c0ffee000001']),
      /revision c0ffee000001 is not supported; supported: .*b47c8f2d1e3a \(17\.0\.0 \(2026\.2\)\).*a newer one's schema is not known/,
    )
  })

  void it('brings NVME and MDEV devices as SSD and PCI, and names an unknown type', () => {
    const plan = planImport(
      snapshot([
        device(1, 'NVME', 'allocated', [true]),
        device(2, 'MDEV', 'available', []),
        device(3, 'TPU', 'available', []),
      ]),
      emptyTargetIndex(),
      NOW,
    )
    assert.deepEqual(
      plan.devices.map((d) => [d.uuid, d.type]),
      [
        [U(1), 'SSD'],
        [U(2), 'PCI'],
      ],
    )
    assert.ok(
      plan.notes.includes(
        `1 device(s) of OpenStack Cyborg's type NVME written as SSD, e.g. ${U(1)}`,
      ),
    )
    assert.ok(
      plan.notes.some((n) =>
        n.startsWith(`1 device(s) of OpenStack Cyborg's type MDEV written as PCI, e.g. ${U(2)}`),
      ),
    )
    assert.deepEqual(
      unmappedRows(plan).find((s) => s.uuid === U(3))?.reason,
      'device type TPU is not one we know (GPU, FPGA, AICHIP, QAT, NIC, SSD, PCI, NVME, MDEV)',
    )
  })

  void it('a device being cleaned has its free units written cleaning; one in error, failed and fenced', () => {
    const plan = planImport(
      snapshot([
        device(1, 'NVME', 'cleaning', [true, true, false]),
        device(2, 'PCI', 'error', [false]),
        device(3, 'PCI', 'pending_cleaning', [false]),
        device(4, 'SSD', null, [true]),
        device(5, 'SSD', 'allocated', [false]),
      ]),
      emptyTargetIndex(),
      NOW,
    )
    assert.deepEqual(unmappedRows(plan), [])
    const units = new Map(plan.attachHandles.map((h) => [h.uuid, [h.inUse, h.cleanState]]))
    assert.deepEqual(Object.fromEntries(units), {
      // The unit the Bound request holds stays its; the others are cleaned before any claim.
      [U(410)]: [true, undefined],
      [U(411)]: [true, 'pending'],
      [U(412)]: [true, 'pending'],
      [U(420)]: [true, 'failed'],
      [U(430)]: [true, 'pending'],
      // No state (not backfilled) and allocated: as the source says.
      [U(440)]: [true, undefined],
      [U(450)]: [false, undefined],
    })
    assert.deepEqual(
      plan.devices.map((d) => [d.uuid, d.deviceState, d.health, d.healthReason]),
      [
        [U(1), 'cleaning', undefined, undefined],
        [U(2), 'error', 'failed', IMPORTED_ERROR_REASON],
        [U(3), 'pending_cleaning', undefined, undefined],
        [U(4), null, undefined, undefined],
        [U(5), 'allocated', undefined, undefined],
      ],
    )
    assert.match(IMPORTED_ERROR_REASON, /^clean failed: /)
    assert.ok(
      plan.notes.some((n) =>
        n.startsWith(`device ${U(1)} was cleaning in OpenStack Cyborg: 2 unit(s)`),
      ),
    )
    assert.ok(plan.notes.some((n) => n.startsWith('1 device(s) have no device_state')))
  })

  void it('leaves out a device whose device_state it cannot read', () => {
    const plan = planImport(snapshot([device(1, 'SSD', 'retired', [])]), emptyTargetIndex(), NOW)
    assert.deepEqual(
      unmappedRows(plan)
        .filter((s) => s.table !== 'extended_accelerator_requests')
        .map((s) => [s.table, s.uuid, s.reason]),
      [
        [
          'devices',
          U(1),
          'device_state retired is not one of available, allocated, pending_cleaning, cleaning, error',
        ],
        ['controlpath_ids', U(101), `its device ${U(1)} is not brought over`],
        ['deployables', U(201), `its device ${U(1)} is not brought over`],
      ],
    )
  })
})
