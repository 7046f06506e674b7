import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import {
  createIntelNicDriver,
  intelNicDevice,
  intelNicTraits,
  parseDeviceMappings,
  type IntelNicPort,
} from './intel-nic.js'
import {
  createFixtureHostProbe,
  garbledFixtureHostProbe as garbled,
} from '../host-probe/fixture-host-probe.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-nic')
const read = (c: string, f: string): unknown =>
  JSON.parse(readFileSync(path.join(fixtures, c, f), 'utf8'))
const discover = (c: string) =>
  createIntelNicDriver(
    { host: createFixtureHostProbe(path.join(fixtures, c)), hostname: 'compute-1' },
    read(c, 'options.json') as Record<string, string>,
  ).discover()

const junk = fc.oneof(
  fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.string({ maxLength: 48 }),
  fc.constantFrom(
    '0x8086\n',
    '0x158b\n',
    '0x1572',
    'PCI_SLOT_NAME=0000:3b:02.0\n',
    'PCI_SLOT_NAME=0000:3b:00.0',
    '',
  ),
)

const port: IntelNicPort = {
  address: '0000:3b:00.0',
  productId: '158b',
  netdev: 'eth2',
  physicalNetwork: 'physnet1',
  functions: ['GTPV1'],
  vfs: [],
}

void describe('intel-nic parsers', () => {
  void it('parses mappings into interface → names', () => {
    assert.deepEqual(
      [...parseDeviceMappings('physnet1:eth2|eth3,physnet2:eth4')],
      [
        ['eth2', ['physnet1']],
        ['eth3', ['physnet1']],
        ['eth4', ['physnet2']],
      ],
    )
    assert.deepEqual(
      [...parseDeviceMappings('GTPV1:eth3|eth2, PPPOE:eth3')],
      [
        ['eth3', ['GTPV1', 'PPPOE']],
        ['eth2', ['GTPV1']],
      ],
    )
    assert.deepEqual([...parseDeviceMappings('a:eth2,b:eth2', true)], [['eth2', ['a']]])
    assert.deepEqual([...parseDeviceMappings('broken,:eth7,x:,x:|')], [])
    assert.deepEqual([...parseDeviceMappings('')], [])
  })

  void it('traits: PF/VF kind, physnet, functions', () => {
    assert.deepEqual(intelNicTraits(port, false), [
      'CUSTOM_NIC_PF',
      'CUSTOM_PHYSNET_PHYSNET1',
      'CUSTOM_GTPV1',
    ])
    assert.deepEqual(
      intelNicTraits({ ...port, physicalNetwork: 'phys-net.2', functions: ['gtp v1'] }, true),
      ['CUSTOM_NIC_VF', 'CUSTOM_PHYSNET_PHYS_NET_2', 'CUSTOM_GTP_V1'],
    )
  })

  void it('one deployable per VF; handles carry physical_network as written', () => {
    const dev = intelNicDevice(
      { ...port, physicalNetwork: 'Physnet-A', vfs: ['0000:3b:02.0', '0000:3b:02.1'] },
      'h',
    )
    assert.equal(dev.type, 'NIC')
    assert.deepEqual(
      dev.deployables.map((d) => d.name),
      ['h_0000:3b:02.0', 'h_0000:3b:02.1'],
    )
    assert.deepEqual(dev.deployables[0]!.attachHandles, [
      {
        type: 'PCI',
        info: {
          domain: '0000',
          bus: '3b',
          device: '02',
          function: '0',
          physical_network: 'Physnet-A',
        },
      },
    ])
    assert.equal(dev.deployables[0]!.attributes[0]!.value, 'CUSTOM_NIC')
  })
})

void describe('intel-nic discover', () => {
  for (const c of ['typical', 'pf-vfs', 'malformed', 'empty', 'no-mappings']) {
    void it(`${c}: matches expected.json`, async () => {
      assert.deepEqual(await discover(c), read(c, 'expected.json'))
    })
  }

  void it('offers only mapped ports (an unmapped port may be the host uplink)', async () => {
    const addresses = (await discover('typical')).map(
      ({ controlPath: { info } }) => 'bus' in info && `${info.function}@${info.bus}`,
    )
    assert.deepEqual(addresses, ['1@18', '0@af'])
  })

  void it('pf-vfs: VFs are reported once, under their PF', async () => {
    const devices = await discover('pf-vfs')
    assert.deepEqual(
      devices.map((d) => d.deployables.length),
      [3, 2],
    )
  })

  void it('never throws on random file contents', async () => {
    const options = read('pf-vfs', 'options.json') as Record<string, string>
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('typical', 'pf-vfs', 'malformed'),
        fc.array(junk, { minLength: 1, maxLength: 8 }),
        async (c, contents) => {
          const devices = await createIntelNicDriver(
            { host: garbled(path.join(fixtures, c), contents), hostname: 'h' },
            options,
          ).discover()
          assert.ok(Array.isArray(devices))
        },
      ),
      { numRuns: 60 },
    )
  })

  void it('never throws on random options', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string(),
        fc.string(),
        async (physical_device_mappings, function_device_mappings) => {
          const host = createFixtureHostProbe(path.join(fixtures, 'pf-vfs'))
          const devices = await createIntelNicDriver(
            { host, hostname: 'h' },
            { physical_device_mappings, function_device_mappings },
          ).discover()
          assert.ok(Array.isArray(devices))
        },
      ),
      { numRuns: 40 },
    )
  })
})

void describe('intel-nic health', () => {
  const options = read('typical', 'options.json') as Record<string, string>

  void it('reads the PCIe health of each port PF', async () => {
    const host = createFixtureHostProbe(path.join(fixtures, 'typical'))
    await host.writeFile(
      '/sys/bus/pci/devices/0000:af:00.0/aer_dev_nonfatal',
      'TOTAL_ERR_NONFATAL 4\n',
    )
    await host.writeFile('/sys/bus/pci/devices/0000:af:00.0/current_link_width', '4\n')
    await host.writeFile('/sys/bus/pci/devices/0000:af:00.0/max_link_width', '8\n')
    const devices = await createIntelNicDriver({ host, hostname: 'h' }, options).discover()
    assert.deepEqual(
      devices.map((d) => d.health),
      [
        undefined,
        { state: 'degraded', reason: '4 non-fatal PCIe AER errors; PCIe link x4, capable of x8' },
      ],
    )
  })

  void it('refuses a bad health option at creation', () => {
    const host = createFixtureHostProbe(path.join(fixtures, 'typical'))
    assert.throws(
      () =>
        createIntelNicDriver({ host, hostname: 'h' }, { ...options, aer_nonfatal_degraded: '1.5' }),
      { name: 'ConfigError', message: /^intel-nic driver option aer_nonfatal_degraded: / },
    )
  })
})
