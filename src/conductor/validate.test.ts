/**
 * The conductor's re-checks through the payload schemas: the words of each failure, and the field
 * named in the dotted notation callers and tests rely on (`devices[0].deployables[1].…`).
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidInputError } from '../domain/errors.js'
import { isUuidLike } from '../domain/ids.js'
import type { DiscoveredDevice } from '../domain/inventory/inventory.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import {
  checkArqBindings,
  checkArqCreate,
  checkArqsOfInstance,
  checkAttributeCreate,
  checkDeviceProfileCreate,
  checkDeviceStatus,
  checkDriverUpdate,
  checkHeartbeat,
  checkSnapshot,
  checkUuid,
  checkUuidList,
  checkUuidsRequest,
  checkV1Detach,
} from './validate.js'

/** Asserts `fn` throws InvalidInputError `message`, naming the field before the first ': '. */
function fails(fn: () => unknown, message: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidInputError, String(err))
    assert.equal(err.message, message)
    assert.deepEqual(err.details, { field: message.slice(0, message.indexOf(': ')) })
    return true
  })
}

const U1 = '6c3f9a52-0b7e-5d1a-9f44-2f6e1c8b7d30'
const U2 = '0e5e2a4c-1a2b-4c3d-8e9f-0a1b2c3d4e5f'

const device = (fn: string, name: string): DiscoveredDevice => ({
  type: 'GPU',
  vendor: '10de',
  model: '',
  stdBoardInfo: null,
  vendorBoardInfo: { serial: 'x' },
  controlPath: { type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: fn } },
  deployables: [
    {
      name,
      numAccelerators: 1,
      driverName: 'nvidia-gpu',
      attributes: [{ key: 'rc', value: 'PGPU' }],
      attachHandles: [{ type: 'PCI', info: { domain: '0000', bus: '3b', function: fn } }],
    },
  ],
})

/** A report of `devices` with their true hash, after `edit` changed them. */
function snapshot(edit: (devices: DiscoveredDevice[]) => void = () => {}, extra = {}) {
  const devices = [device('0', 'h_a'), device('1', 'h_b')]
  edit(devices)
  return { host: 'h', hash: inventoryHash(devices), devices, autoActivate: false, ...extra }
}
const report = (r: unknown) => () => checkSnapshot(r as ReturnType<typeof snapshot>)
/** The first device's first deployable, as a loose record to break. */
const dep = (devices: DiscoveredDevice[]) =>
  devices[0]!.deployables[0] as unknown as Record<string, unknown>

void describe('checkSnapshot', () => {
  void it('accepts a good report, a REMOTE control path and an upper-case uuid', () => {
    checkSnapshot(snapshot())
    checkSnapshot(snapshot((d) => (d[0]!.serial = '1324021001234')))
    checkSnapshot(
      snapshot(
        (d) => {
          d[1]!.controlPath = { type: 'REMOTE', info: { uuid: U1 } }
          d[1]!.deployables[0]!.uuid = U2.toUpperCase()
        },
        { resourceProvider: { name: 'h', uuid: U2 } },
      ),
    )
  })

  void it('names the report, its fields, and the missing ones', () => {
    fails(report(null), 'snapshot: must be an object')
    fails(report({ ...snapshot(), host: undefined }), 'host: must be a string')
    fails(report({ ...snapshot(), host: '' }), 'host: must not be empty')
    fails(report({ ...snapshot(), host: 'h'.repeat(256) }), 'host: must be at most 255 characters')
    fails(report({ ...snapshot(), autoActivate: 'yes' }), 'autoActivate: must be a boolean')
    fails(
      report(snapshot(undefined, { resourceProvider: { name: 'h', uuid: 'nope' } })),
      'resourceProvider.uuid: must be a UUID',
    )
    fails(report({ ...snapshot(), devices: {} }), 'devices: must be an array')
  })

  void it('names a device field by index and property', () => {
    const broken = (edit: (d: Record<string, unknown>) => void) =>
      report(snapshot((ds) => edit(ds[1] as unknown as Record<string, unknown>)))
    fails(
      report(snapshot((ds) => (ds[1] = null as unknown as DiscoveredDevice))),
      'devices[1]: must be an object',
    )
    fails(
      broken((d) => (d.type = 'TPU')),
      'devices[1].type: must be one of GPU, FPGA, AICHIP, QAT, NIC, SSD, PCI, REMOTE',
    )
    fails(
      broken((d) => (d.vendor = 7)),
      'devices[1].vendor: must be a string',
    )
    fails(
      broken((d) => delete d.stdBoardInfo),
      'devices[1].stdBoardInfo: must be an object or null',
    )
    fails(
      broken((d) => (d.vendorBoardInfo = [])),
      'devices[1].vendorBoardInfo: must be an object or null',
    )
    fails(
      broken((d) => (d.controlPath = { type: 'USB', info: {} })),
      'devices[1].controlPath.type: must be one of PCI, REMOTE',
    )
    fails(
      broken((d) => (d.controlPath = { type: 'PCI', info: { bus: 59 } })),
      'devices[1].controlPath.info.bus: must be a string',
    )
    fails(
      broken((d) => (d.serial = 42)),
      'devices[1].serial: must be a string',
    )
    // A key that looks like an index is still a key; one with a line break is still checked.
    fails(
      broken((d) => (d.controlPath = { type: 'PCI', info: { '0': 1 } })),
      'devices[1].controlPath.info.0: must be a string',
    )
    fails(
      broken((d) => (d.controlPath = { type: 'PCI', info: { 'a\nb': 1 } })),
      'devices[1].controlPath.info.a\nb: must be a string',
    )
    fails(
      broken((d) => (d.health = { state: 'sick' })),
      'devices[1].health.state: must be one of ok, degraded, failed, unknown',
    )
    fails(
      broken((d) => (d.health = null)),
      'devices[1].health: must be an object',
    )
  })

  void it('names deployables, attributes and attach handles', () => {
    const broken = (edit: (d: Record<string, unknown>) => void) =>
      report(snapshot((ds) => edit(dep(ds))))
    const at = 'devices[0].deployables[0]'
    fails(
      broken((d) => (d.uuid = 'nope')),
      `${at}.uuid: must be a UUID`,
    )
    fails(
      broken((d) => (d.numAccelerators = -1)),
      `${at}.numAccelerators: must be a non-negative integer`,
    )
    fails(
      broken((d) => (d.numAccelerators = 1.5)),
      `${at}.numAccelerators: must be a non-negative integer`,
    )
    fails(
      broken((d) => (d.driverName = 'x'.repeat(101))),
      `${at}.driverName: must be at most 100 characters`,
    )
    fails(
      broken(
        (d) =>
          (d.attributes = [
            { key: 'a', value: '' },
            { key: 'b', value: 'x' },
            { key: '', value: 'x' },
          ]),
      ),
      `${at}.attributes[2].key: must not be empty`,
    )
    fails(
      broken((d) => (d.attributes = [{ key: 'a', value: 'x'.repeat(65536) }])),
      `${at}.attributes[0].value: must be at most 65535 characters`,
    )
    fails(
      broken((d) => (d.attributes = [{ key: 'a', value: 'x', note: 1 }])),
      `${at}.attributes[0].note: must be a string`,
    )
    fails(
      broken((d) => (d.attachHandles = [{ type: 'USB', info: {} }])),
      `${at}.attachHandles[0].type: must be one of PCI, MDEV, TEST_PCI`,
    )
    fails(
      broken((d) => (d.attachHandles = 'none')),
      `${at}.attachHandles: must be an array`,
    )
  })

  void it('checks after the schema what it cannot say', () => {
    fails(
      report(snapshot((ds) => (ds[1]!.controlPath = ds[0]!.controlPath))),
      'devices[1].controlPath: is reported twice',
    )
    fails(
      report(
        snapshot((ds) => (ds[1]!.controlPath = { type: 'REMOTE', info: { id: U1 } } as never)),
      ),
      'devices[1].controlPath.info.uuid: must be a UUID',
    )
    fails(
      report(snapshot((ds) => (ds[1]!.deployables[0]!.name = 'h_a'))),
      'devices[1].deployables[0].name: h_a is reported twice',
    )
    const a = { key: 'rc', value: 'x' }
    fails(
      report(snapshot((ds) => (dep(ds).attributes = [a, { key: 'trait', value: 'y' }, a]))),
      'devices[0].deployables[0].attributes[2].key: rc is reported twice',
    )
    const h = { type: 'PCI', info: { b: '2', a: '1' } }
    const same = { type: 'MDEV', info: { a: '1', b: '2' } }
    fails(
      report(snapshot((ds) => (dep(ds).attachHandles = [h, same]))),
      'devices[0].deployables[0].attachHandles[1].info: is reported twice',
    )
    fails(
      report({ ...snapshot(), hash: 'f'.repeat(64) }),
      'hash: is not the sha256 of the canonical JSON of devices',
    )
  })
})

void describe('ARQ payloads', () => {
  void it('bindings: keyed by ARQ uuid, fields named as in Nova', () => {
    const b = { hostname: 'h', instanceUuid: U2 }
    assert.deepEqual(checkArqBindings({ [U1]: { ...b, extra: 1, deviceRpUuid: undefined } }), {
      [U1]: b,
    })
    fails(() => checkArqBindings(null), 'bindings: must be an object keyed by ARQ uuid')
    fails(() => checkArqBindings([]), 'bindings: must be an object keyed by ARQ uuid')
    fails(() => checkArqBindings({}), 'bindings: must name at least one accelerator request')
    fails(() => checkArqBindings({ nope: b }), 'uuid: must be a UUID')
    fails(
      () => checkArqBindings({ [U1]: { ...b, hostname: '' } }),
      `${U1}.hostname: must not be empty`,
    )
    fails(
      () => checkArqBindings({ [U1]: { hostname: 'h' } }),
      `${U1}.instance_uuid: must be a UUID`,
    )
    fails(
      () => checkArqBindings({ [U1]: { ...b, deviceRpUuid: 'x' } }),
      `${U1}.device_rp_uuid: must be a UUID`,
    )
    fails(
      () => checkArqBindings({ [U1]: { ...b, projectId: 1 } }),
      `${U1}.project_id: must be a string`,
    )
  })

  void it('uuid lists are named arqs', () => {
    assert.deepEqual(checkUuidList([U1, U2]), [U1, U2])
    fails(() => checkUuidList(undefined), 'arqs: must be a UUID')
    fails(() => checkUuidList([]), 'arqs: must be a UUID')
    fails(() => checkUuidList([U1, 'x']), 'arqs[1]: must be a UUID')
  })

  void it('create and delete by instance use the API names', () => {
    const good = { deviceProfileName: 'p', maxArqs: 4, projectId: null }
    assert.deepEqual(checkArqCreate(good), good)
    fails(
      () => checkArqCreate({ ...good, deviceProfileName: 3 }),
      'device_profile_name: must be a string',
    )
    fails(() => checkArqCreate({ ...good, maxArqs: 0 }), 'maxArqs: must be a positive integer')
    fails(
      () => checkArqCreate({ ...good, maxArqs: 2 ** 53 }),
      'maxArqs: must be a positive integer',
    )
    fails(() => checkArqCreate({ ...good, projectId: undefined }), 'project_id: must be a string')
    fails(() => checkArqCreate({ ...good, projectId: '' }), 'project_id: must not be empty')
    fails(() => checkArqCreate(null), 'request: must be an object')
    fails(() => checkArqsOfInstance({ instanceUuid: 'x' }), 'instance: must be a UUID')
    fails(
      () => checkArqsOfInstance({ instanceUuid: U1, projectId: 5 }),
      'project_id: must be a string',
    )
  })
})

void describe('other writes', () => {
  void it('names each field', () => {
    fails(
      () => checkHeartbeat({ host: 'h', binary: 'b'.repeat(65), version: '' }),
      'binary: must be at most 64 characters',
    )
    assert.deepEqual(checkHeartbeat({ host: 'h', binary: 'b', version: '' }), {
      host: 'h',
      binary: 'b',
      version: '',
    })
    const profile = { name: 'p', description: null, groups: [{ 'resources:PGPU': '1' }] }
    assert.deepEqual(checkDeviceProfileCreate(profile), profile)
    fails(
      () => checkDeviceProfileCreate({ ...profile, description: 'd'.repeat(65536) }),
      'description: must be at most 65535 characters',
    )
    fails(
      () => checkDeviceProfileCreate({ ...profile, description: 1 }),
      'description: must be a string',
    )
    fails(() => checkDeviceProfileCreate({ ...profile, groups: [] }), 'groups: must not be empty')
    fails(
      () => checkDeviceProfileCreate({ ...profile, groups: [{ a: '1' }, { b: 2 }] }),
      'groups[1].b: must be a string',
    )
    fails(
      () => checkDeviceProfileCreate({ ...profile, groups: [[]] }),
      'groups[0]: must be an object',
    )
    fails(() => checkUuidsRequest({ uuids: U1 }), 'uuids: must be an array')
    fails(() => checkUuidsRequest({ uuids: [U1, 'x'] }), 'uuids[1]: must be a UUID')
    fails(
      () => checkAttributeCreate({ deployableId: '1', key: 'k', value: 'v' }),
      'deployableId: must be a positive integer',
    )
    fails(
      () => checkDeviceStatus({ uuid: U1, status: 'broken' }),
      'status: must be one of enabled, maintaining',
    )
    fails(() => checkV1Detach({ uuid: U1, instanceUuid: 'x' }), 'instance_uuid: must be a UUID')
    fails(() => checkDriverUpdate({ driver: 'd', options: null }), 'options: must be an object')
    fails(() => checkUuid(7, 'uuid'), 'uuid: must be a UUID')
  })

  void it('takes uuids as isUuidLike does', () => {
    for (const v of [U1, U1.toUpperCase(), `${U1} `, U1.slice(1), U1.replace(/-/g, ''), `x${U1}`]) {
      let ok = true
      try {
        checkUuid(v, 'uuid')
      } catch {
        ok = false
      }
      assert.equal(ok, isUuidLike(v), v)
    }
  })
})
