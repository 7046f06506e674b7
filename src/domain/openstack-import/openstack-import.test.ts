/**
 * The import plan on hand-made snapshots: every reason a row is left out that the recorded fixture
 * cannot hold (its enums and foreign keys forbid them), the changes that are only notes, the
 * revision check, and the diff keeping an imported provider uuid.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { diffInventory } from '../inventory/inventory-diff.js'
import {
  openStackRevision,
  OPENSTACK_REVISIONS,
  type OpenStackSnapshot,
} from './openstack-cyborg.js'
import { planImport, unmappedRows } from './openstack-import.js'
import { normalizePciFields, pciControlPath } from './openstack-import-inventory.js'
import { emptyTargetIndex, osTimestamp } from './openstack-import-plan.js'
import { profileGroups } from './openstack-import-requests.js'
import type { DiscoveredDevice } from '../inventory/inventory.js'

const NOW = '2026-11-26T12:00:00.000000+00:00'
const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const stamps = (id: number, uuid = U(id)) => ({
  id,
  uuid,
  createdAt: '2026-01-02 03:04:05',
  updatedAt: null,
})
const PCI = '{"domain": "0000", "bus": "3B", "device": "0", "function": "1"}'

/** One GPU on host h with one deployable, two handles, a profile and two requests. */
function snapshot(): OpenStackSnapshot {
  return {
    revision: OPENSTACK_REVISIONS[1]!,
    devices: [
      {
        ...stamps(1),
        type: 'GPU',
        vendor: '10de',
        model: '1eb8',
        stdBoardInfo: null,
        vendorBoardInfo: null,
        hostname: 'h',
        status: 'enabled',
      },
    ],
    controlPaths: [{ ...stamps(1, U(101)), deviceId: 1, cpidType: 'PCI', cpidInfo: PCI }],
    deployables: [
      {
        ...stamps(1, U(201)),
        parentId: null,
        rootId: null,
        name: 'h_0000:3b:00.1',
        numAccelerators: 1,
        deviceId: 1,
        rpUuid: U(901),
        driverName: 'NVIDIA',
        bitstreamId: null,
      },
    ],
    attributes: [{ ...stamps(1, U(301)), deployableId: 1, key: 'rc', value: 'PGPU' }],
    attachHandles: [1, 2].map((id) => ({
      ...stamps(id, U(400 + id)),
      deployableId: 1,
      cpidId: 1,
      inUse: false,
      attachType: 'PCI',
      attachInfo: `{"domain": "0000", "bus": "3b", "device": "00", "function": "${id}"}`,
    })),
    deviceProfiles: [
      {
        ...stamps(1, U(501)),
        name: 'gpu',
        profileJson: '{"groups": [{"resources:PGPU": "1"}]}',
        description: null,
      },
    ],
    arqs: [1, 2].map((id) => ({
      ...stamps(id, U(600 + id)),
      projectId: null,
      state: 'Bound',
      deviceProfileId: 1,
      deviceProfileGroupId: 0,
      hostname: 'h',
      deviceRpUuid: U(901),
      instanceUuid: U(700 + id),
      attachHandleId: id,
      deployableId: null,
    })),
  }
}

const reasons = (s: OpenStackSnapshot) =>
  unmappedRows(planImport(s, emptyTargetIndex(), NOW)).map((r) => [r.uuid, r.reason])

void describe('import plan', () => {
  void it('writes PCI fields and control paths in our drivers’ form, timestamps in ours', () => {
    assert.deepEqual(normalizePciFields({ bus: '3B', device: '0', function: '7', x: 'Y' }), {
      bus: '3b',
      device: '00',
      function: '7',
      x: 'Y',
    })
    assert.equal(pciControlPath(PCI), '{"bus":"3b","device":"00","domain":"0000","function":"1"}')
    assert.equal(pciControlPath('{"bus": "3b"}'), undefined)
    assert.equal(
      pciControlPath('{"domain": "0000", "bus": "zz", "device": "0", "function": "1"}'),
      undefined,
    )
    assert.equal(osTimestamp('2026-11-25 06:58:52', NOW), '2026-11-25T06:58:52.000000+00:00')
    assert.equal(osTimestamp('2026-11-25 06:58:52.25', NOW), '2026-11-25T06:58:52.250000+00:00')
    assert.equal(osTimestamp(null, NOW), NOW)
  })

  void it('brings a consistent snapshot over whole, with notes for what it changes', () => {
    const s = snapshot()
    s.arqs[1]!.state = 'Initial'
    s.arqs[1]!.attachHandleId = null
    s.attachHandles[1]!.inUse = true
    const plan = planImport(s, emptyTargetIndex(), NOW)
    assert.deepEqual(unmappedRows(plan), [])
    assert.equal(
      plan.devices[0]!.identityKey,
      'path:{"bus":"3b","device":"00","domain":"0000","function":"1"}',
    )
    assert.equal(plan.devices[0]!.createdAt, '2026-01-02T03:04:05.000000+00:00')
    assert.deepEqual(plan.arqs[0], {
      ...plan.arqs[0],
      handleUuid: U(401),
      deployableUuid: U(201),
      profileUuid: U(501),
    })
    assert.equal(plan.attachHandles[0]!.inUse, true)
    assert.deepEqual(plan.notes, [
      `attach handle ${U(401)} is held by request ${U(601)}: marked in use`,
      `request ${U(601)} names no deployable: its attach handle's is recorded`,
      `attach handle ${U(402)} is in use but no request brought over holds it: kept in use (cyborg db check reports it)`,
    ])
  })

  void it('names every row it cannot map, with the reason', () => {
    const s = snapshot()
    s.devices.push({ ...s.devices[0]!, ...stamps(2), type: 'DPU' })
    s.devices.push({ ...s.devices[0]!, ...stamps(3), hostname: 'h3' })
    s.controlPaths.push({ ...stamps(3, U(103)), deviceId: 3, cpidType: 'NVME', cpidInfo: PCI })
    s.devices.push({ ...s.devices[0]!, ...stamps(4) })
    s.controlPaths.push({ ...stamps(4, U(104)), deviceId: 4, cpidType: 'PCI', cpidInfo: PCI })
    s.controlPaths.push({ ...stamps(5, U(105)), deviceId: 1, cpidType: 'PCI', cpidInfo: PCI })
    s.deployables.push({ ...s.deployables[0]!, ...stamps(2, U(202)), rpUuid: null })
    s.deployables.push({ ...s.deployables[0]!, ...stamps(3, U(203)), name: 'other' })
    s.attachHandles.push({ ...s.attachHandles[0]!, ...stamps(3, U(403)), attachType: 'VFIO' })
    s.deviceProfiles.push(
      ...[
        ['bad name', '{"groups": [{"resources:PGPU": "1"}]}'],
        ['p3', '{"groups": [{"resources:PGPU": "0"}]}'],
        ['p4', '{"groups": [{"accel:image": "x"}]}'],
        ['p5', '{"groups": [{"trait:CUSTOM_A": "required", "trait: CUSTOM_A": "forbidden"}]}'],
        ['p6', '{"groups": []}'],
      ].map(([name, profileJson], i) => ({
        ...stamps(i + 2, U(502 + i)),
        name: name!,
        profileJson: profileJson!,
        description: null,
      })),
    )
    s.arqs.push({ ...s.arqs[0]!, ...stamps(3, U(603)), state: 'Frozen', attachHandleId: null })
    s.arqs[1]!.deployableId = 1
    s.attachHandles.push({
      ...s.attachHandles[0]!,
      ...stamps(4, U(404)),
      deployableId: 3,
      attachInfo: PCI,
    })
    s.arqs.push({ ...s.arqs[0]!, ...stamps(4, U(604)), attachHandleId: 4, deployableId: 1 })
    assert.deepEqual(reasons(s), [
      [U(105), `device ${U(1)} has more than one control path; the first (${U(101)}) is kept`],
      [
        U(2),
        'device type DPU is not one we know (GPU, FPGA, AICHIP, QAT, NIC, SSD, PCI, NVME, MDEV)',
      ],
      [U(3), 'control path type NVME is not supported (PCI only)'],
      [U(103), `its device ${U(3)} is not brought over`],
      [
        U(4),
        `its control path {"bus":"3b","device":"00","domain":"0000","function":"1"} on host h is also device ${U(1)}'s`,
      ],
      [U(104), `its device ${U(4)} is not brought over`],
      [U(202), `its name h_0000:3b:00.1 is also deployable ${U(201)}'s (names must be unique)`],
      [U(203), `its provider uuid ${U(901)} is also deployable ${U(201)}'s`],
      [U(403), 'attach type VFIO is not supported (PCI, MDEV, TEST_PCI)'],
      [U(404), `its deployable ${U(203)} is not brought over`],
      [U(502), 'its name bad name may hold only letters, digits, - and _ (at most 255)'],
      [U(503), 'group 0 key resources:PGPU: the amount 0 is not a positive integer'],
      [
        U(504),
        'group 0 key accel:image: unknown accel key (accel:bitstream_id, accel:function_id)',
      ],
      [
        U(505),
        `Invalid input for field 'groups[0]["trait: CUSTOM_A"]': duplicates the key "trait:CUSTOM_A"`,
      ],
      [U(506), 'its profile_json has no list of groups'],
      [U(603), 'state Frozen is not one we know'],
      [U(604), `its attach handle ${U(404)} is not brought over`],
    ])
  })

  void it('checks groups as our API does', () => {
    assert.deepEqual(
      profileGroups('p', '{"groups": [{"resources:CUSTOM_X": 2, "trait: CUSTOM_Y ": "required"}]}'),
      {
        groups: [{ 'resources:CUSTOM_X': '2', 'trait:CUSTOM_Y': 'required' }],
      },
    )
    assert.deepEqual(profileGroups('p', '{"groups": [{"foo": "1"}]}'), {
      problem: 'group 0 key foo: keys must start with resources:, trait: or accel:',
    })
    assert.deepEqual(profileGroups('p', '{"groups": [{"trait:CUSTOM_Y": "yes"}]}'), {
      problem: 'group 0 key trait:CUSTOM_Y: the value must be required or forbidden',
    })
  })

  void it('with --merge, leaves rows the target has and refuses what collides with it', () => {
    const s = snapshot()
    const target = emptyTargetIndex()
    target.empty = false
    target.devices.add(U(1))
    target.deployables.add(U(201))
    target.attachHandles.add(U(401))
    target.heldHandles.set(U(402), U(699))
    target.profileNames.set('gpu', U(599))
    const plan = planImport(s, target, NOW)
    assert.deepEqual(
      plan.skipped.map((r) => [r.uuid, r.present === true, r.reason]),
      [
        [U(1), true, 'already in the target'],
        [U(101), true, 'its device is in the target already'],
        [U(201), true, 'already in the target'],
        [U(401), true, 'already in the target'],
        [U(501), false, `its name gpu is profile ${U(599)}'s in the target`],
        [U(601), false, `its device profile ${U(501)} is not brought over`],
        [U(602), false, `its device profile ${U(501)} is not brought over`],
      ],
    )
    assert.deepEqual(
      plan.attachHandles.map((h) => h.uuid),
      [U(402)],
    )
    assert.deepEqual(
      plan.attributes.map((a) => a.deployableUuid),
      [U(201)],
    )
  })

  void it('knows the revisions from 9.0.0 to 2026.1 and refuses others by name', () => {
    assert.equal(openStackRevision(['4cc1d79978fc']).deviceStatus, false)
    assert.equal(openStackRevision(['6c77bd6afea5']).deviceStatus, true)
    assert.throws(
      () => openStackRevision(['899cead40bc9']),
      /revision 899cead40bc9 is not supported; supported: 4cc1d79978fc \(9\.0\.0 \(Zed\) and 10\.x \(2023\.1\)\), 6c77bd6afea5/,
    )
    assert.throws(() => openStackRevision([]), /has 0 alembic_version rows/)
  })

  void it('a report keeps an imported provider uuid (the diff sets only a missing one)', () => {
    const device: DiscoveredDevice = {
      type: 'FPGA',
      vendor: '0xABCD',
      model: 'miss model info',
      stdBoardInfo: null,
      vendorBoardInfo: null,
      controlPath: {
        type: 'PCI',
        info: { domain: '0000', bus: '0c', device: '00', function: '0' },
      },
      deployables: [
        {
          name: 'vm_FakeDevice',
          numAccelerators: 16,
          driverName: 'fake',
          attributes: [],
          attachHandles: [],
        },
      ],
    }
    const current = {
      id: 1,
      uuid: U(1),
      key: '{"bus":"0c","device":"00","domain":"0000","function":"0"}',
      type: 'FPGA',
      vendor: device.vendor,
      model: device.model,
      stdBoardInfo: null,
      vendorBoardInfo: null,
      health: 'ok',
      lifecycleReason: null,
      deployables: [
        {
          id: 1,
          uuid: U(201),
          name: 'vm_FakeDevice',
          numAccelerators: 16,
          driverName: 'fake',
          rpUuid: '823f5e9e-ef5b-3461-bd09-8006cc3755d1',
          inUse: false,
          inPlacement: true,
          removalPending: false,
          attributes: [],
          handles: [],
        },
      ],
    }
    const diff = diffInventory('vm', [current], [device])
    assert.deepEqual(diff.updateDeployables, [])
    current.deployables[0]!.rpUuid = null as unknown as string
    assert.equal(
      diffInventory('vm', [current], [device]).updateDeployables[0]?.set.rpUuid?.length,
      36,
    )
  })
})
