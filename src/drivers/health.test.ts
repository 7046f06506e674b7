import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { choiceOption, counted, thresholdOption, withHealth, worstHealth } from './health.js'
import { ConfigError } from '../domain/errors.js'
import type { DiscoveredDevice } from '../domain/inventory/inventory.js'

const device: DiscoveredDevice = {
  type: 'PCI',
  vendor: '10de',
  model: '1eb8',
  stdBoardInfo: null,
  vendorBoardInfo: null,
  controlPath: { type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: '0' } },
  deployables: [],
}

void describe('health: worstHealth', () => {
  void it('is undefined when every finding is ok or absent', () => {
    assert.equal(worstHealth([]), undefined)
    assert.equal(worstHealth([undefined, { state: 'ok' }, undefined]), undefined)
  })

  void it('ranks ok < degraded < unknown < failed', () => {
    const d = { state: 'degraded', reason: 'd' } as const
    const u = { state: 'unknown', reason: 'u' } as const
    const f = { state: 'failed', reason: 'f' } as const
    assert.deepEqual(worstHealth([d, u]), u)
    assert.deepEqual(worstHealth([u, d, f]), f)
    assert.deepEqual(worstHealth([{ state: 'ok' }, d]), d)
  })

  void it('keeps the reasons of every finding at the worst level, in order, and only those', () => {
    assert.deepEqual(
      worstHealth([
        { state: 'degraded', reason: 'link x8' },
        { state: 'failed', reason: '1 fatal PCIe AER error' },
        { state: 'failed' },
        { state: 'failed', reason: '2 uncorrectable ECC errors (volatile)' },
      ]),
      { state: 'failed', reason: '1 fatal PCIe AER error; 2 uncorrectable ECC errors (volatile)' },
    )
    assert.deepEqual(worstHealth([{ state: 'degraded' }]), { state: 'degraded' })
  })
})

void describe('health: withHealth', () => {
  void it('returns the device itself when healthy, so healthy output is unchanged', () => {
    assert.equal(withHealth(device, undefined), device)
    assert.equal(withHealth(device, { state: 'ok', reason: 'fine' }), device)
    assert.equal('health' in withHealth(device, undefined), false)
  })

  void it('sets health on a copy when not ok', () => {
    const h = { state: 'degraded', reason: 'PCIe link x8, capable of x16' } as const
    const out = withHealth(device, h)
    assert.notEqual(out, device)
    assert.deepEqual(out, { ...device, health: h })
    assert.equal(device.health, undefined)
  })

  void it('clips a reason to 255 characters, which the conductor accepts', () => {
    const out = withHealth(device, { state: 'failed', reason: 'x'.repeat(300) })
    assert.equal(out.health?.reason?.length, 255)
    assert.ok(out.health?.reason?.endsWith('…'))
  })
})

void describe('health: thresholdOption', () => {
  void it('takes the fallback when absent or blank, else the integer; 0 (off) is valid', () => {
    assert.equal(thresholdOption('pci', {}, 'aer_fatal_failed', 1), 1)
    assert.equal(thresholdOption('pci', { aer_fatal_failed: '  ' }, 'aer_fatal_failed', 1), 1)
    assert.equal(thresholdOption('pci', { aer_fatal_failed: ' 25 ' }, 'aer_fatal_failed', 1), 25)
    assert.equal(thresholdOption('pci', { aer_fatal_failed: '0' }, 'aer_fatal_failed', 1), 0)
  })

  void it('takes a number given as a number (options read from JSON)', () => {
    const options = { n: 7 } as unknown as Record<string, string>
    assert.equal(thresholdOption('pci', options, 'n', 1), 7)
  })

  void it('refuses anything else with a ConfigError naming the driver and the option', () => {
    for (const bad of ['-1', '1.5', 'ten', '1e3', '0x10', '1234567890']) {
      assert.throws(
        () =>
          thresholdOption(
            'nvidia-gpu',
            { ecc_uncorrectable_failed: bad },
            'ecc_uncorrectable_failed',
            1,
          ),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError)
          assert.equal(err.code, 'INVALID_DRIVER_OPTION')
          assert.deepEqual(err.details, {
            driver: 'nvidia-gpu',
            option: 'ecc_uncorrectable_failed',
          })
          assert.match(err.message, /^nvidia-gpu driver option ecc_uncorrectable_failed: /)
          assert.ok(err.message.includes(`'${bad}'`), err.message)
          return true
        },
      )
    }
  })
})

void describe('health: choiceOption', () => {
  const choices = ['speed-and-width', 'width', 'off'] as const

  void it('takes the fallback when absent or blank, else one of the words (trimmed)', () => {
    assert.equal(choiceOption('pci', {}, 'link_check', choices, 'width'), 'width')
    assert.equal(choiceOption('pci', { link_check: '' }, 'link_check', choices, 'off'), 'off')
    assert.equal(
      choiceOption('pci', { link_check: ' off\n' }, 'link_check', choices, 'width'),
      'off',
    )
  })

  void it('refuses another word with a ConfigError listing the accepted ones', () => {
    assert.throws(
      () => choiceOption('intel-nic', { link_check: 'Width' }, 'link_check', choices, 'off'),
      {
        name: 'ConfigError',
        code: 'INVALID_DRIVER_OPTION',
        message:
          "intel-nic driver option link_check: must be one of speed-and-width, width, off, got 'Width'",
      },
    )
  })
})

void describe('health: counted', () => {
  void it('pluralises', () => {
    assert.equal(counted(1, 'fatal PCIe AER error'), '1 fatal PCIe AER error')
    assert.equal(counted(0, 'error'), '0 errors')
    assert.equal(counted(2, 'uncorrectable ECC error'), '2 uncorrectable ECC errors')
  })
})
