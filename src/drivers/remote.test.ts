import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isRemoteAccelerator, type HostProbe } from './driver.js'
import { createDrivers } from './index.js'
import { assertDeviceInvariants } from './driver-contract.case.js'
import {
  createRemoteDriver,
  isRemoteDriver,
  parseRemoteAccelerators,
  REMOTE_RESOURCE_CLASS,
  remoteDevice,
} from './remote.js'
import { ConfigError } from '../domain/errors.js'
import { canonicalJson } from '../domain/inventory/inventory.js'

/** A host that fails every call: the remote driver must never touch it. */
const untouchable: HostProbe = {
  readFile: () => Promise.reject(new Error('remote driver read the host')),
  readDir: () => Promise.reject(new Error('remote driver read the host')),
  exists: () => Promise.reject(new Error('remote driver read the host')),
  exec: () => Promise.reject(new Error('remote driver ran a command')),
  writeFile: () => Promise.reject(new Error('remote driver wrote the host')),
}
const deps = { host: untouchable, hostname: 'compute-1' }
const A = { name: 'IPSec Card', uuid: '8e45a2ea-5364-4b0d-a252-bf8becaa606e' }
const B = { name: 'rack-2 card', uuid: '1b3f0c5e-2f43-4f6a-9a57-0b1f2c3d4e5f' }

void describe('remote driver', () => {
  void it('reports nothing until it is given registrations, and never touches the host', async () => {
    const driver = createRemoteDriver(deps)
    assert.equal(driver.deviceType, 'REMOTE')
    assert.deepEqual(await driver.discover(), [])
  })

  void it('reports one REMOTE device per registration, sorted by uuid, keyed by {uuid}, with the uuid hint', async () => {
    const driver = createRemoteDriver(deps)
    driver.setRemoteAccelerators([A, B])
    const devices = await driver.discover()
    assertDeviceInvariants(driver.deviceType, devices)
    assert.deepEqual(
      devices.map((d) => d.controlPath),
      [
        { type: 'REMOTE', info: { uuid: B.uuid } },
        { type: 'REMOTE', info: { uuid: A.uuid } },
      ],
    )
    const dep = devices[1]!.deployables[0]!
    assert.deepEqual(
      {
        name: dep.name,
        uuid: dep.uuid,
        num: dep.numAccelerators,
        driver: dep.driverName,
        handles: dep.attachHandles,
      },
      { name: A.name, uuid: A.uuid, num: 1, driver: 'remote', handles: [] },
    )
    assert.deepEqual(dep.attributes, [
      { key: 'rc', value: REMOTE_RESOURCE_CLASS },
      { key: 'trait0', value: 'OWNER_CYBORG' },
    ])
    // Its control path can never equal a PCI one (different keys in the canonical JSON).
    assert.equal(canonicalJson(remoteDevice(A).controlPath.info), `{"uuid":"${A.uuid}"}`)
  })

  void it('replaces its list on every setRemoteAccelerators, and hands out fresh objects', async () => {
    const driver = createRemoteDriver(deps, { accelerators: JSON.stringify([A]) })
    assert.deepEqual(
      (await driver.discover()).map((d) => d.deployables[0]!.name),
      [A.name],
    )
    driver.setRemoteAccelerators([B])
    const first = await driver.discover()
    first[0]!.deployables[0]!.name = 'mutated'
    assert.deepEqual(
      (await driver.discover()).map((d) => d.deployables[0]!.name),
      [B.name],
    )
    driver.setRemoteAccelerators([])
    assert.deepEqual(await driver.discover(), [])
  })

  void it('refuses a malformed accelerators option with a ConfigError naming it', () => {
    for (const bad of [
      '{',
      '{"name":"x"}',
      '[{"name":""}]',
      `[{"name":"x","uuid":"${A.uuid.toUpperCase()}"}]`,
      '[1]',
    ]) {
      assert.throws(
        () => parseRemoteAccelerators(bad),
        (err) => err instanceof ConfigError && /option accelerators/.test(err.message),
        bad,
      )
    }
    assert.deepEqual(parseRemoteAccelerators(undefined), [])
    assert.deepEqual(parseRemoteAccelerators(' '), [])
    assert.equal(isRemoteAccelerator({ name: 'x'.repeat(256), uuid: A.uuid }), false)
  })

  void it('is in the registry as remote and as generic_remote, and only it is a RemoteDriver', () => {
    const [remote, alias, fake] = [
      ...createDrivers(['remote'], deps),
      ...createDrivers(['generic_remote'], deps),
      ...createDrivers(['fake'], deps),
    ]
    assert.equal(remote?.name, 'remote')
    assert.equal(alias?.name, 'remote')
    assert.ok(remote && isRemoteDriver(remote))
    assert.ok(fake && !isRemoteDriver(fake))
  })

  void it('fails an aborted discovery', async () => {
    const controller = new AbortController()
    controller.abort(new Error('stop'))
    await assert.rejects(
      createRemoteDriver(deps).discover({ signal: controller.signal }),
      /aborted/,
    )
  })
})
