import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  DEFAULT_PCI_HEALTH,
  judgePciHealth,
  parseAerTotal,
  parseLinkSpeed,
  parseLinkWidth,
  pciHealth,
  pciHealthThresholds,
  readPciHealth,
  withPciHealth,
  type PciHealthThresholds,
} from './pci-health.js'
import type { HostProbe } from '../driver.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import { ConfigError } from '../../domain/errors.js'
import type { DiscoveredDevice } from '../../domain/inventory/inventory.js'

const fixture = new URL('../__fixtures__/pci/aer-link', import.meta.url).pathname
const ROOT = '/sys/bus/pci/devices'

/** An aer_dev_fatal file as drivers/pci/pcie/aer.c prints it: one line per error bit, then the total. */
const AER_FATAL = `Undefined 0
DLP 0
SDES 0
TLP 0
FCP 0
CmpltTO 0
CmpltAbrt 0
UnxCmplt 0
RxOF 0
MalfTLP 2
ECRC 0
UnsupReq 0
ACSViol 0
UncorrIntErr 1
BlockedTLP 0
AtomicOpBlocked 0
TLPBlockedErr 0
PoisonTLPBlocked 0
TOTAL_ERR_FATAL 3
`

const AER_COR = `RxErr 1187
BadTLP 12
BadDLLP 5
Rollover 0
Timeout 0
NonFatalErr 0
CorrIntErr 0
HeaderOF 0
TOTAL_ERR_COR 1204
`

const t = (over: Partial<PciHealthThresholds> = {}): PciHealthThresholds => ({
  ...DEFAULT_PCI_HEALTH,
  ...over,
})

const device = (address: string): DiscoveredDevice => {
  const [domain, bus, rest] = address.split(':') as [string, string, string]
  const [dev, fn] = rest.split('.') as [string, string]
  return {
    type: 'PCI',
    vendor: '15b3',
    model: '1017',
    stdBoardInfo: null,
    vendorBoardInfo: null,
    controlPath: { type: 'PCI', info: { domain, bus, device: dev, function: fn } },
    deployables: [],
  }
}

/** A probe that counts file reads. */
const counting = (inner: HostProbe): HostProbe & { reads: string[] } => {
  const reads: string[] = []
  return {
    ...inner,
    reads,
    readFile: (p) => {
      reads.push(p)
      return inner.readFile(p)
    },
  }
}

void describe('pci-health: parsers', () => {
  void it('reads the TOTAL_ERR_* line of realistic AER counter files', () => {
    assert.equal(parseAerTotal(AER_FATAL), 3)
    assert.equal(parseAerTotal(AER_COR), 1204)
    assert.equal(parseAerTotal(AER_FATAL.replace(/MalfTLP 2\n/, '').replace('3\n', '0\n')), 0)
    assert.equal(parseAerTotal('TOTAL_ERR_NONFATAL 7\r\n'), 7)
  })

  void it('has no total without a TOTAL_ERR_* line, or for garbage', () => {
    assert.equal(parseAerTotal(undefined), undefined)
    assert.equal(parseAerTotal(''), undefined)
    assert.equal(parseAerTotal('RxErr 4\nBadTLP 1\n'), undefined)
    assert.equal(parseAerTotal('TOTAL_ERR_COR lots\n'), undefined)
    assert.equal(parseAerTotal('XTOTAL_ERR_COR 4\n'), undefined)
  })

  void it('reads link speeds of new and old kernels; Unknown is no speed', () => {
    assert.equal(parseLinkSpeed('16.0 GT/s PCIe\n'), 16)
    assert.equal(parseLinkSpeed('2.5 GT/s PCIe\n'), 2.5)
    assert.equal(parseLinkSpeed('8 GT/s\n'), 8)
    assert.equal(parseLinkSpeed('Unknown\n'), undefined)
    assert.equal(parseLinkSpeed('Unknown speed\n'), undefined)
    assert.equal(parseLinkSpeed(''), undefined)
    assert.equal(parseLinkSpeed(undefined), undefined)
  })

  void it('reads link widths; 0 (link down or a VF) is no width', () => {
    assert.equal(parseLinkWidth('16\n'), 16)
    assert.equal(parseLinkWidth('x8'), 8)
    assert.equal(parseLinkWidth('0\n'), undefined)
    assert.equal(parseLinkWidth('sixteen'), undefined)
    assert.equal(parseLinkWidth(undefined), undefined)
  })
})

void describe('pci-health: judgePciHealth', () => {
  void it('is healthy with nothing to judge or everything below thresholds', () => {
    assert.equal(judgePciHealth({}, t()), undefined)
    assert.equal(
      judgePciHealth(
        { aerFatal: 0, aerNonfatal: 0, aerCorrectable: 999, currentSpeed: 8, maxSpeed: 8 },
        t(),
      ),
      undefined,
    )
  })

  void it('fails on fatal errors, degrades on non-fatal and many correctable ones (at the threshold)', () => {
    assert.deepEqual(judgePciHealth({ aerFatal: 1 }, t()), {
      state: 'failed',
      reason: '1 fatal PCIe AER error',
    })
    assert.deepEqual(judgePciHealth({ aerNonfatal: 2, aerCorrectable: 1000 }, t()), {
      state: 'degraded',
      reason: '2 non-fatal PCIe AER errors; 1000 correctable PCIe AER errors',
    })
    assert.deepEqual(judgePciHealth({ aerFatal: 2, aerNonfatal: 5 }, t()), {
      state: 'failed',
      reason: '2 fatal PCIe AER errors',
    })
    assert.equal(
      judgePciHealth({ aerCorrectable: 40 }, t({ aerCorrectableDegraded: 50 })),
      undefined,
    )
    assert.equal(
      judgePciHealth({ aerCorrectable: 50 }, t({ aerCorrectableDegraded: 50 }))?.state,
      'degraded',
    )
  })

  void it('treats a threshold of 0 as off', () => {
    const off = t({ aerFatalFailed: 0, aerNonfatalDegraded: 0, aerCorrectableDegraded: 0 })
    assert.equal(
      judgePciHealth({ aerFatal: 9, aerNonfatal: 9, aerCorrectable: 1e6 }, off),
      undefined,
    )
  })

  void it('link_check: speed-and-width judges both, width only the width, off neither', () => {
    const slowNarrow = { currentSpeed: 2.5, maxSpeed: 16, currentWidth: 8, maxWidth: 16 }
    const slow = { currentSpeed: 2.5, maxSpeed: 16, currentWidth: 16, maxWidth: 16 }
    assert.deepEqual(judgePciHealth(slowNarrow, t()), {
      state: 'degraded',
      reason: 'PCIe link x8, capable of x16; PCIe link 2.5 GT/s, capable of 16 GT/s',
    })
    assert.deepEqual(judgePciHealth(slowNarrow, t({ linkCheck: 'width' })), {
      state: 'degraded',
      reason: 'PCIe link x8, capable of x16',
    })
    assert.equal(judgePciHealth(slow, t({ linkCheck: 'width' })), undefined)
    assert.equal(judgePciHealth(slowNarrow, t({ linkCheck: 'off' })), undefined)
  })

  void it('does not judge a link with an unknown side', () => {
    assert.equal(judgePciHealth({ currentSpeed: 2.5, currentWidth: 4 }, t()), undefined)
    assert.equal(judgePciHealth({ maxSpeed: 8, maxWidth: 4 }, t()), undefined)
  })
})

void describe('pci-health: pciHealthThresholds', () => {
  void it('gives the defaults, or the driver defaults, when no option is set', () => {
    assert.deepEqual(pciHealthThresholds('pci', {}), {
      aerFatalFailed: 1,
      aerNonfatalDegraded: 1,
      aerCorrectableDegraded: 1000,
      linkCheck: 'speed-and-width',
    })
    const gpu = { ...DEFAULT_PCI_HEALTH, linkCheck: 'width' as const }
    assert.deepEqual(pciHealthThresholds('nvidia-gpu', {}, gpu), gpu)
  })

  void it('reads every option, ignoring the options of other features', () => {
    assert.deepEqual(
      pciHealthThresholds('intel-nic', {
        aer_fatal_failed: '0',
        aer_nonfatal_degraded: '3',
        aer_correctable_degraded: '50000',
        link_check: 'off',
        physical_device_mappings: 'physnet1:eth2',
      } as Record<string, string>),
      {
        aerFatalFailed: 0,
        aerNonfatalDegraded: 3,
        aerCorrectableDegraded: 50000,
        linkCheck: 'off',
      },
    )
  })

  void it('refuses a bad option with a ConfigError naming the driver and the option', () => {
    const cases: [Record<string, string>, string][] = [
      [{ aer_fatal_failed: 'yes' }, 'aer_fatal_failed'],
      [{ aer_nonfatal_degraded: '-1' }, 'aer_nonfatal_degraded'],
      [{ aer_correctable_degraded: '1k' }, 'aer_correctable_degraded'],
      [{ link_check: 'speed' }, 'link_check'],
    ]
    for (const [options, option] of cases) {
      assert.throws(
        () => pciHealthThresholds('xilinx-fpga', options),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.code === 'INVALID_DRIVER_OPTION' &&
          err.message.startsWith(`xilinx-fpga driver option ${option}: `) &&
          (err.details as { driver: string; option: string }).option === option &&
          (err.details as { driver: string }).driver === 'xilinx-fpga',
      )
    }
  })
})

void describe('pci-health: reading sysfs', () => {
  void it('reads the AER counters and link of the aer-link fixture', async () => {
    const host = createFixtureHostProbe(fixture)
    assert.deepEqual(await readPciHealth(host, '0000:5e:00.0'), {
      aerFatal: 0,
      aerNonfatal: 0,
      aerCorrectable: 1204,
      currentSpeed: 8,
      maxSpeed: 8,
      currentWidth: 8,
      maxWidth: 16,
    })
    // A VF shows Unknown and 0; an NVMe in D3cold has no AER files and an unknown speed.
    assert.deepEqual(await readPciHealth(host, '0000:86:00.2'), {})
    assert.deepEqual(await readPciHealth(host, '0000:d8:00.0'), { maxSpeed: 8, maxWidth: 4 })
    assert.deepEqual(await readPciHealth(host, '0000:99:00.0'), {})
  })

  void it('judges a function under the given root', async () => {
    const files = {
      '/host/sys/0000:3b:00.0/aer_dev_fatal': AER_FATAL,
      '/host/sys/0000:3b:00.0/current_link_width': '4\n',
      '/host/sys/0000:3b:00.0/max_link_width': '16\n',
    }
    const host = createMemoryHostProbe(files)
    assert.deepEqual(await pciHealth(host, '0000:3b:00.0', t(), '/host/sys'), {
      state: 'failed',
      reason: '3 fatal PCIe AER errors',
    })
    assert.equal(await pciHealth(host, '0000:3b:00.0', t()), undefined, 'default root is elsewhere')
  })
})

void describe('pci-health: withPciHealth', () => {
  const files = {
    [`${ROOT}/0000:3b:00.0/aer_dev_correctable`]: AER_COR,
    [`${ROOT}/0000:3b:00.0/current_link_speed`]: '2.5 GT/s PCIe\n',
    [`${ROOT}/0000:3b:00.0/max_link_speed`]: '8.0 GT/s PCIe\n',
    [`${ROOT}/0000:af:00.0/aer_dev_nonfatal`]: 'TOTAL_ERR_NONFATAL 0\n',
  }

  void it('folds the finding of each control path in; healthy devices are left as they are', async () => {
    const a = device('0000:3b:00.0')
    const b = device('0000:af:00.0')
    const [ha, hb] = await withPciHealth(createMemoryHostProbe(files), [a, b], t())
    assert.deepEqual(ha!.health, {
      state: 'degraded',
      reason: '1204 correctable PCIe AER errors; PCIe link 2.5 GT/s, capable of 8 GT/s',
    })
    assert.equal(hb, b)
  })

  void it('keeps an earlier worse finding, and reads the function functionOf names', async () => {
    const vf = { ...device('0000:3b:00.4'), health: { state: 'failed' as const, reason: 'x' } }
    const [out] = await withPciHealth(createMemoryHostProbe(files), [vf], t(), {
      functionOf: () => '0000:3b:00.0',
    })
    assert.deepEqual(out!.health, { state: 'failed', reason: 'x' })
    const [plain] = await withPciHealth(
      createMemoryHostProbe(files),
      [device('0000:3b:00.4')],
      t(),
      {
        functionOf: () => '0000:3b:00.0',
      },
    )
    assert.equal(plain!.health?.state, 'degraded')
  })

  void it('reads nothing when every check is off', async () => {
    const host = counting(createMemoryHostProbe(files))
    const off = {
      aerFatalFailed: 0,
      aerNonfatalDegraded: 0,
      aerCorrectableDegraded: 0,
      linkCheck: 'off' as const,
    }
    const out = await withPciHealth(host, [device('0000:3b:00.0')], off)
    assert.equal(out[0]!.health, undefined)
    assert.deepEqual(host.reads, [])
  })
})
