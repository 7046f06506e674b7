import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { buildPciDevices, createPciDriver, parseDeviceSpec, pciTraits, specMatches } from './pci.js'
import { parsePciAddress, type PciFunction } from './pci-sysfs.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import { ConfigError } from '../../domain/errors.js'

const fixture = (c: string): string => new URL(`../__fixtures__/pci/${c}`, import.meta.url).pathname

const fn = (
  address: string,
  vendorId = '10de',
  productId = '1eb8',
  physfn?: string,
): PciFunction => ({
  address,
  pci: parsePciAddress(address)!,
  vendorId,
  productId,
  classCode: '030200',
  ...(physfn === undefined ? {} : { physfn }),
})

const matches = (spec: string, f: PciFunction): boolean => specMatches(parseDeviceSpec(spec)[0]!, f)

void describe('pci: parseDeviceSpec / specMatches (Nova device_spec syntax)', () => {
  void it('takes an object or a list; empty text is no whitelist', () => {
    assert.equal(parseDeviceSpec('').length, 0)
    assert.equal(parseDeviceSpec(undefined).length, 0)
    assert.equal(parseDeviceSpec('{"vendor_id":"10de"}').length, 1)
    assert.equal(parseDeviceSpec('[{"vendor_id":"10de"},{"product_id":"1eb8"}]').length, 2)
  })

  void it('matches vendor and product ids, with * and 0x tolerated', () => {
    assert.ok(matches('{"vendor_id":"10de","product_id":"1eb8"}', fn('0000:3b:00.0')))
    assert.ok(matches('{"vendor_id":"10DE","product_id":"*"}', fn('0000:3b:00.0')))
    assert.ok(matches('{"vendor_id":"0x10de"}', fn('0000:3b:00.0')))
    assert.ok(!matches('{"vendor_id":"10de","product_id":"1eb9"}', fn('0000:3b:00.0')))
    assert.ok(matches('{}', fn('0000:3b:00.0')), 'an empty entry matches everything')
  })

  void it('matches address globs [[[[<domain>]:]<bus>]:][<slot>][.[<function>]]', () => {
    const f = fn('0000:0a:00.1')
    for (const glob of [
      '0000:0a:00.1',
      '*:0a:00.*',
      '0a:00.1',
      ':0a:00.',
      '00.1',
      '*:*:*.*',
      '0:a:0.1',
      '',
      '.1',
      '0a:00.',
    ]) {
      assert.ok(matches(JSON.stringify({ address: glob }), f), glob)
    }
    for (const glob of ['0000:0b:00.1', '*:0a:01.*', '0a:00.0', '0001:0a:00.1', '.2']) {
      assert.ok(!matches(JSON.stringify({ address: glob }), f), glob)
    }
  })

  void it('matches regex address dicts as full matches over padded hex', () => {
    const spec = '{"address":{"domain":"0000","bus":"3[bc]","slot":"0.","function":"[0-3]"}}'
    assert.ok(matches(spec, fn('0000:3b:00.2')))
    assert.ok(matches(spec, fn('0000:3c:01.0')))
    assert.ok(!matches(spec, fn('0000:3d:00.0')))
    assert.ok(!matches(spec, fn('0000:3b:00.4')))
    assert.ok(!matches('{"address":{"bus":"3"}}', fn('0000:3b:00.0')), 'no partial match')
  })

  void it('refuses invalid specs with ConfigError INVALID_DEVICE_SPEC', () => {
    for (const bad of [
      '{not json',
      '"10de"',
      '[1]',
      '{"vendor_id":10}',
      '{"vendor_id":"xyz"}',
      '{"vendor_id":"12345"}',
      '{"address":"0000:0a:20.0"}',
      '{"address":"0:0:0a:00.0"}',
      '{"address":"0a:00.8"}',
      '{"address":{"bus":"("}}',
      '{"address":{"bus":3}}',
      '{"address":[]}',
      '{"devname":"eth0"}',
    ]) {
      assert.throws(
        () => parseDeviceSpec(bad),
        (err) => err instanceof ConfigError && err.code === 'INVALID_DEVICE_SPEC',
        bad,
      )
    }
    assert.throws(
      () =>
        createPciDriver({ host: createMemoryHostProbe({}), hostname: 'h' }, { device_spec: '{' }),
      ConfigError,
    )
  })
})

void describe('pci: buildPciDevices', () => {
  void it('names deployables <host>_<address>, carries physical_network and the documented traits', () => {
    const [d] = buildPciDevices(
      'h1',
      [fn('0000:3b:00.0')],
      parseDeviceSpec('{"vendor_id":"10de","physical_network":"physnet1"}'),
    )
    assert.ok(d)
    assert.equal(d.type, 'PCI')
    assert.equal(d.deployables[0]!.name, 'h1_0000:3b:00.0')
    assert.deepEqual(d.deployables[0]!.attachHandles, [
      {
        type: 'PCI',
        info: {
          domain: '0000',
          bus: '3b',
          device: '00',
          function: '0',
          physical_network: 'physnet1',
        },
      },
    ])
    assert.deepEqual(
      d.deployables[0]!.attributes.map((a) => a.value),
      ['CUSTOM_PCI', 'OWNER_CYBORG', 'CUSTOM_PCI_NVIDIA', 'CUSTOM_PCI_PRODUCT_ID_1EB8'],
    )
    assert.deepEqual(pciTraits('abcd', '00ff'), [
      'OWNER_CYBORG',
      'CUSTOM_PCI_ABCD',
      'CUSTOM_PCI_PRODUCT_ID_00FF',
    ])
  })

  void it('offers the matched VFs of a PF, not the PF too; the first matching entry wins', () => {
    const fns = [
      fn('0000:5e:00.0', '15b3', '1017'),
      fn('0000:5e:00.2', '15b3', '1018', '0000:5e:00.0'),
    ]
    const specs = parseDeviceSpec(
      '[{"product_id":"1018","physical_network":"a"},{"vendor_id":"15b3","physical_network":"b"}]',
    )
    const devices = buildPciDevices('h', fns, specs)
    assert.deepEqual(
      devices.map((d) => d.deployables[0]!.name),
      ['h_0000:5e:00.2'],
    )
    assert.equal(devices[0]!.deployables[0]!.attachHandles[0]!.info.physical_network, 'a')
    // The PF alone is offered when its VFs are not whitelisted.
    assert.deepEqual(
      buildPciDevices('h', fns, parseDeviceSpec('{"product_id":"1017"}')).map(
        (d) => d.deployables[0]!.name,
      ),
      ['h_0000:5e:00.0'],
    )
  })
})

void describe('pci: discover()', () => {
  void it('offers nothing without a whitelist, without reading the host', async () => {
    const host = createFixtureHostProbe(fixture('typical'))
    assert.deepEqual(await createPciDriver({ host, hostname: 'h' }).discover(), [])
  })

  void it('reads the typical fixture (details in expected.json, checked by the contract suite)', async () => {
    const dir = fixture('typical')
    const options = JSON.parse(
      await createFixtureHostProbe('/').readFile(`${dir}/options.json`),
    ) as Record<string, string>
    const devices = await createPciDriver(
      { host: createFixtureHostProbe(dir), hostname: 'compute-1' },
      options,
    ).discover()
    assert.deepEqual(
      devices.map((d) => d.deployables[0]!.name),
      [
        'compute-1_0000:3b:00.0',
        'compute-1_0000:5e:00.2',
        'compute-1_0000:5e:00.3',
        'compute-1_0000:af:00.0',
      ],
    )
  })

  void it('stops on an aborted signal', async () => {
    const driver = createPciDriver(
      { host: createMemoryHostProbe({}), hostname: 'h' },
      { device_spec: '{}' },
    )
    await assert.rejects(driver.discover({ signal: AbortSignal.abort() }), { code: 'ABORTED' })
  })

  void it('never throws on random bytes in sysfs files (property)', async () => {
    const root = '/sys/bus/pci/devices'
    const random = fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b).toString('latin1'))
    const bytes = fc.oneof(
      random,
      fc.constantFrom(
        '0x10de\n',
        '0x1eb8\n',
        '0x030200\n',
        'PCI_SLOT_NAME=0000:3b:00.0\n',
        'PCI_SLOT_NAME=0000:3b:00.1\n',
        'TOTAL_ERR_FATAL 2\n',
        '8.0 GT/s PCIe\n',
      ),
    )
    const entry = fc.oneof(
      fc.constantFrom('0000:3b:00.0', '0000:3b:00.1', '3b:00.2'),
      fc
        .string({ maxLength: 12 })
        .filter((s) => !s.includes('/') && s !== '' && s !== '.' && s !== '..'),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(entry, bytes, bytes, bytes, bytes), { maxLength: 4 }),
        async (rows) => {
          const files: Record<string, string> = {}
          for (const [e, v, d, c, p] of rows) {
            Object.assign(files, {
              [`${root}/${e}/vendor`]: v,
              [`${root}/${e}/device`]: d,
              [`${root}/${e}/class`]: c,
              [`${root}/${e}/physfn/uevent`]: p,
              [`${root}/${e}/aer_dev_fatal`]: d,
              [`${root}/${e}/current_link_speed`]: c,
              [`${root}/${e}/max_link_width`]: v,
            })
          }
          const driver = createPciDriver(
            { host: createMemoryHostProbe(files), hostname: 'h' },
            { device_spec: '{}' },
          )
          const devices = await driver.discover()
          assert.ok(Array.isArray(devices))
        },
      ),
      { numRuns: 150 },
    )
  })
})

void describe('pci: health', () => {
  const discover = async (options: Record<string, string> = {}) => {
    const dir = fixture('aer-link')
    const base = JSON.parse(
      await createFixtureHostProbe('/').readFile(`${dir}/options.json`),
    ) as Record<string, string>
    const driver = createPciDriver(
      { host: createFixtureHostProbe(dir), hostname: 'h' },
      { ...base, ...options },
    )
    return (await driver.discover()).map((d) => [d.deployables[0]!.name, d.health?.state])
  }

  void it('aer-link: fatal AER fails, many correctable or a downtrained link degrade; a VF carries its PF', async () => {
    assert.deepEqual(await discover(), [
      ['h_0000:3b:00.0', 'failed'],
      ['h_0000:5e:00.0', 'degraded'],
      ['h_0000:86:00.2', 'degraded'],
      ['h_0000:d8:00.0', undefined],
    ])
  })

  void it('thresholds are options: 0 turns a check off, link_check narrows or stops the link check', async () => {
    assert.deepEqual(
      await discover({
        aer_fatal_failed: '0',
        aer_correctable_degraded: '2000',
        link_check: 'width',
      }),
      [
        ['h_0000:3b:00.0', undefined],
        ['h_0000:5e:00.0', 'degraded'],
        ['h_0000:86:00.2', undefined],
        ['h_0000:d8:00.0', undefined],
      ],
    )
    assert.deepEqual(
      (await discover({ aer_correctable_degraded: '0', link_check: 'off' })).map((r) => r[1]),
      ['failed', undefined, undefined, undefined],
    )
  })

  void it('reads the AER files under sysfs_root', async () => {
    const root = '/host/sys/bus/pci/devices'
    const files = {
      [`${root}/0000:3b:00.0/vendor`]: '0x10de\n',
      [`${root}/0000:3b:00.0/device`]: '0x1eb8\n',
      [`${root}/0000:3b:00.0/aer_dev_nonfatal`]: 'CmpltTO 1\nTOTAL_ERR_NONFATAL 1\n',
    }
    const [d] = await createPciDriver(
      { host: createMemoryHostProbe(files), hostname: 'h' },
      { device_spec: '{}', sysfs_root: root },
    ).discover()
    assert.deepEqual(d?.health, { state: 'degraded', reason: '1 non-fatal PCIe AER error' })
  })

  void it('refuses a bad health option at creation with a ConfigError naming pci and the option', () => {
    const deps = { host: createMemoryHostProbe({}), hostname: 'h' }
    assert.throws(() => createPciDriver(deps, { aer_fatal_failed: 'x' }), {
      name: 'ConfigError',
      code: 'INVALID_DRIVER_OPTION',
      message: /^pci driver option aer_fatal_failed: /,
    })
    assert.throws(() => createPciDriver(deps, { link_check: 'on' }), {
      message: /^pci driver option link_check: must be one of speed-and-width, width, off/,
    })
  })
})
