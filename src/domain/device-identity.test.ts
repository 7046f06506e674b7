import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  attachHandleUuid,
  attributeUuid,
  deployableUuid,
  deviceUuid,
  identityKey,
  identityKeys,
  matchDevices,
  pathKey,
  restoredLifecycle,
  usableSerial,
  type KnownIdentity,
} from './device-identity.js'
import { canonicalJson, type DiscoveredDevice } from './inventory/inventory.js'
import { sampleDevice } from '../../test/support/sample-inventory.js'

const HOST = 'h1'
const V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const withSerial = (n: number, serial?: string): DiscoveredDevice => ({
  ...sampleDevice(HOST, n),
  ...(serial === undefined ? {} : { serial }),
})
const path = (d: DiscoveredDevice) => canonicalJson(d.controlPath.info)
const known = (identityKey: string, uuid: string, lifecycle = 'active'): KnownIdentity => ({
  identityKey,
  deviceUuid: uuid,
  lifecycle,
  lifecycleReason: null,
  status: 'enabled',
})

await test('identity key: a usable serial, else the canonical control path', () => {
  const d = sampleDevice(HOST, 0)
  assert.equal(identityKey(d), `path:${path(d)}`)
  assert.equal(identityKey({ ...d, serial: ' 1324021001234 ' }), 'serial:1324021001234')
  for (const none of ['', '  ', 'N/A', 'Not Specified', '0000', 'x'.repeat(201)]) {
    assert.equal(usableSerial(none), undefined, none)
    assert.equal(identityKey({ ...d, serial: none }), `path:${path(d)}`)
  }
  // A remote accelerator is its registration, whatever it says.
  const remote = {
    ...d,
    serial: 'S',
    controlPath: { type: 'REMOTE' as const, info: { uuid: 'u' } },
  }
  assert.equal(identityKey(remote), 'path:{"uuid":"u"}')
  // A serial two devices of one report share identifies neither.
  const [a, b, c] = identityKeys([withSerial(0, 'S'), withSerial(1, 'S'), withSerial(2, 'T')])
  assert.deepEqual(
    [a, b, c],
    [pathKey(path(sampleDevice(HOST, 0))), pathKey(path(sampleDevice(HOST, 1))), 'serial:T'],
  )
})

await test('uuids are deterministic, v5, and distinct across hosts, identities and parents', () => {
  const dev = deviceUuid(HOST, 'serial:S')
  assert.match(dev, V5)
  assert.equal(dev, deviceUuid(HOST, 'serial:S'))
  assert.notEqual(dev, deviceUuid('h2', 'serial:S'))
  assert.notEqual(dev, deviceUuid(HOST, 'serial:T'))
  const dep = deployableUuid(dev, 'h1_0000:10:00.0')
  assert.match(dep, V5)
  assert.notEqual(dep, deployableUuid(deviceUuid(HOST, 'serial:T'), 'h1_0000:10:00.0'))
  const info = canonicalJson({ bus: '10', device: '00', domain: '0000', function: '0' })
  assert.match(attachHandleUuid(dep, info), V5)
  assert.equal(attachHandleUuid(dep, info), attachHandleUuid(dep, info))
  assert.notEqual(attachHandleUuid(dep, info), attributeUuid(dep, info))
})

await test('a returning device gets its lifecycle back; an interrupted install returns inactive', () => {
  assert.deepEqual(restoredLifecycle(known('k', 'u', 'active')), {
    lifecycle: 'active',
    reason: null,
  })
  assert.deepEqual(restoredLifecycle({ ...known('k', 'u', 'error'), lifecycleReason: 'boom' }), {
    lifecycle: 'error',
    reason: 'boom',
  })
  for (const l of ['ready', 'installing', 'inactive'])
    assert.deepEqual(restoredLifecycle(known('k', 'u', l)), { lifecycle: 'inactive', reason: null })
})

await test('matching: rows by serial (moved), by path, remembered identities, or new', () => {
  const a = withSerial(0, 'SA')
  const b = withSerial(1)
  const rows = [
    { id: 1, uuid: 'ua', key: path(a) },
    { id: 2, uuid: 'ub', key: path(b) },
  ]
  const ids = [known('serial:SA', 'ua'), known(pathKey(path(b)), 'ub')]
  // Same report: each row is itself.
  assert.deepEqual(
    matchDevices(HOST, rows, [a, b], ids).map((m) => [m.row?.id, m.uuid]),
    [
      [1, 'ua'],
      [2, 'ub'],
    ],
  )
  // SA moved to device 5's address: still row 1.
  const moved = { ...withSerial(5, 'SA') }
  assert.deepEqual(matchDevices(HOST, rows, [moved], ids)[0], {
    identityKey: 'serial:SA',
    row: rows[0],
    uuid: 'ua',
  })
  // Another serial at SA's address: a new device, derived uuid.
  const other = withSerial(0, 'SX')
  assert.deepEqual(matchDevices(HOST, rows, [other], ids)[0], {
    identityKey: 'serial:SX',
    uuid: deviceUuid(HOST, 'serial:SX'),
  })
  // No serial at SA's address: absence is not a different serial.
  assert.equal(matchDevices(HOST, rows, [withSerial(0)], ids)[0]!.row, rows[0])
  // A path-keyed row now reporting a serial keeps its uuid; its identity is renamed.
  assert.deepEqual(matchDevices(HOST, rows, [withSerial(1, 'SB')], ids)[0], {
    identityKey: 'serial:SB',
    row: rows[1],
    uuid: 'ub',
    rekeyFrom: pathKey(path(b)),
  })
  // No rows: remembered identities give their uuids back, with what they were.
  const back = matchDevices(HOST, [], [a, b], ids)
  assert.deepEqual(
    back.map((m) => [m.uuid, m.known?.identityKey]),
    [
      ['ua', 'serial:SA'],
      ['ub', pathKey(path(b))],
    ],
  )
  // A remembered path identity is adopted by a device that now has a serial there.
  assert.deepEqual(
    matchDevices(HOST, [], [withSerial(1, 'SB')], ids)[0]!.rekeyFrom,
    pathKey(path(b)),
  )
})
