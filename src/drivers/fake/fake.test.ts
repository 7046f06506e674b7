import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFakeDriver, fakeDeployableName, fakeHandleAddress } from './fake.js'
import type { HostProbe } from '../driver.js'

const noHost = new Proxy({} as HostProbe, {
  get: () => () => Promise.reject(new Error('the fake driver must not touch the host')),
})

void describe('fake driver', () => {
  const driver = createFakeDriver({ host: noHost, hostname: 'compute-1.example' })

  void it('reports one FPGA exactly as real Cyborg fake_driver does', async () => {
    const [device, ...rest] = await driver.discover()
    assert.equal(rest.length, 0)
    assert.equal(driver.name, 'fake')
    assert.equal(driver.deviceType, 'FPGA')
    assert.ok(device)
    assert.equal(device.type, 'FPGA')
    assert.equal(device.vendor, '0xABCD')
    assert.equal(device.model, 'miss model info')
    assert.deepEqual(device.stdBoardInfo, { device_id: '0xabcd', class: 'Fake class' })
    assert.deepEqual(device.vendorBoardInfo, { fake_vendor_info: 'fake_info' })
    assert.deepEqual(device.controlPath, {
      type: 'PCI',
      info: { domain: '0000', bus: '0c', device: '00', function: '0' },
    })
    assert.equal(device.deployables.length, 1)
    const dep = device.deployables[0]!
    assert.equal(dep.name, 'compute_1_example_FakeDevice')
    assert.equal(dep.numAccelerators, 16)
    assert.equal(dep.driverName, 'fake')
    assert.deepEqual(dep.attributes, [
      { key: 'rc', value: 'FPGA' },
      { key: 'trait0', value: 'CUSTOM_FAKE_DEVICE' },
    ])
    assert.equal(dep.attachHandles.length, 16)
    assert.ok(dep.attachHandles.every((h) => h.type === 'TEST_PCI'))
    assert.deepEqual(dep.attachHandles[0]!.info, {
      domain: '0000',
      bus: '0c',
      device: '00',
      function: '1',
    })
    assert.deepEqual(dep.attachHandles[7]!.info, {
      domain: '0000',
      bus: '0c',
      device: '01',
      function: '0',
    })
    assert.deepEqual(dep.attachHandles[15]!.info, {
      domain: '0000',
      bus: '0c',
      device: '02',
      function: '0',
    })
    const unique = new Set(dep.attachHandles.map((h) => JSON.stringify(h.info)))
    assert.equal(unique.size, 16)
  })

  void it('returns equal but independent data on every run', async () => {
    const a = await driver.discover()
    const b = await driver.discover()
    assert.deepEqual(a, b)
    a[0]!.deployables[0]!.attachHandles[0]!.info.bus = 'ff'
    assert.equal(b[0]!.deployables[0]!.attachHandles[0]!.info.bus, '0c')
    assert.equal((await driver.discover())[0]!.deployables[0]!.attachHandles[0]!.info.bus, '0c')
  })

  void it('names the deployable after the host, non-alphanumerics as _', () => {
    assert.equal(fakeDeployableName('node_1'), 'node_1_FakeDevice')
    assert.equal(fakeDeployableName('a-b.c:d'), 'a_b_c_d_FakeDevice')
    assert.deepEqual(fakeHandleAddress(9), {
      domain: '0000',
      bus: '0c',
      device: '01',
      function: '1',
    })
  })

  void it('honours an aborted signal', async () => {
    await assert.rejects(driver.discover({ signal: AbortSignal.abort() }), { code: 'ABORTED' })
  })

  void it('reports the health its options set (for tests and demos), and refuses an unknown one', async () => {
    const deps = { host: noHost, hostname: 'h1' }
    const [healthy] = await createFakeDriver(deps).discover()
    assert.equal(healthy!.health, undefined, 'ok is not reported')
    const options = { health: 'failed', health_reason: '2 uncorrectable ECC errors' }
    const [sick] = await createFakeDriver(deps, options).discover()
    assert.deepEqual(sick!.health, { state: 'failed', reason: '2 uncorrectable ECC errors' })
    assert.throws(() => createFakeDriver(deps, { health: 'sick' }), {
      name: 'InvalidInputError',
      message: "Invalid input for field 'health': must be one of: ok, degraded, failed, unknown",
    })
  })

  void it('reports the serial its options set (the device identity), none by default', async () => {
    const deps = { host: noHost, hostname: 'h1' }
    const [plain] = await createFakeDriver(deps).discover()
    assert.equal(plain!.serial, undefined)
    const [card] = await createFakeDriver(deps, { serial: 'FAKE-0001' }).discover()
    assert.equal(card!.serial, 'FAKE-0001')
  })
})
