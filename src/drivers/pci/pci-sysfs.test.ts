import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  formatPciAddress,
  listPciFunctions,
  parseClassCode,
  parseHexId,
  parsePciAddress,
  parseUeventSlotName,
  readScanRoot,
} from './pci-sysfs.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import type { HostProbe } from '../driver.js'
import { DriverError } from '../../domain/errors.js'

void describe('pci-sysfs parsers', () => {
  void it('parses PCI addresses in sysfs, short and nvidia-smi forms', () => {
    assert.deepEqual(parsePciAddress('0000:3b:00.0'), {
      domain: '0000',
      bus: '3b',
      device: '00',
      function: '0',
    })
    assert.deepEqual(parsePciAddress('3B:1f.7'), {
      domain: '0000',
      bus: '3b',
      device: '1f',
      function: '7',
    })
    assert.deepEqual(parsePciAddress('00000000:AF:00.4'), {
      domain: '0000',
      bus: 'af',
      device: '00',
      function: '4',
    })
    assert.equal(formatPciAddress(parsePciAddress(' 0001:00:02.1\n')!), '0001:00:02.1')
  })

  void it('refuses invalid addresses', () => {
    for (const bad of [
      '',
      '.gitkeep',
      '0000:3b:00',
      '0000:3b:20.0',
      '0000:3b:00.8',
      'zz:00.0',
      'x0000:3b:00.0',
      '10000:00:00.0',
    ]) {
      assert.equal(parsePciAddress(bad), undefined, bad)
    }
  })

  void it('parses id, class and uevent files', () => {
    assert.equal(parseHexId('0x10DE\n'), '10de')
    assert.equal(parseHexId('0x1\n'), '0001')
    assert.equal(parseHexId('10de'), undefined)
    assert.equal(parseHexId('0x12345'), undefined)
    assert.equal(parseClassCode('0x030200\n'), '030200')
    assert.equal(parseClassCode('0x0302'), undefined)
    assert.equal(
      parseUeventSlotName('DRIVER=nvidia\nPCI_SLOT_NAME=0000:3B:00.0\nMODALIAS=x\n'),
      '0000:3b:00.0',
    )
    assert.equal(parseUeventSlotName('DRIVER=nvidia\nPCI_SLOT_NA'), undefined)
    assert.equal(parseUeventSlotName('PCI_SLOT_NAME=garbage'), undefined)
  })
})

void describe('pci-sysfs scanning', () => {
  void it('treats a missing root as an empty host', async () => {
    assert.deepEqual(await readScanRoot(createMemoryHostProbe({}), '/sys/bus/pci/devices'), [])
  })

  void it('fails with DriverError SYSFS_UNREADABLE when the root exists but cannot be listed', async () => {
    const host: HostProbe = {
      ...createMemoryHostProbe({}),
      readDir: () => Promise.reject(new Error('EACCES')),
      exists: () => Promise.resolve(true),
    }
    await assert.rejects(
      readScanRoot(host, '/sys/bus/pci/devices'),
      (err) => err instanceof DriverError && err.code === 'SYSFS_UNREADABLE',
    )
  })

  void it('reads functions sorted, with the PF of a VF and without unreadable ones', async () => {
    const root = '/sys/bus/pci/devices'
    const host = createMemoryHostProbe({
      [`${root}/0000:5e:00.2/vendor`]: '0x15b3\n',
      [`${root}/0000:5e:00.2/device`]: '0x1018\n',
      [`${root}/0000:5e:00.2/class`]: '0x020000\n',
      [`${root}/0000:5e:00.2/physfn/uevent`]: 'PCI_SLOT_NAME=0000:5e:00.0\n',
      [`${root}/0000:5e:00.0/vendor`]: '0x15b3\n',
      [`${root}/0000:5e:00.0/device`]: '0x1017\n',
      [`${root}/0000:5e:00.1/vendor`]: 'junk',
      [`${root}/0000:5e:00.1/device`]: '0x1017\n',
    })
    const fns = await listPciFunctions(host)
    assert.deepEqual(
      fns.map((f) => [f.address, f.productId, f.classCode, f.physfn]),
      [
        ['0000:5e:00.0', '1017', '', undefined],
        ['0000:5e:00.2', '1018', '020000', '0000:5e:00.0'],
      ],
    )
  })
})
