import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createPciDriver } from './pci.js'
import { createIntelQatDriver } from '../intel-qat/intel-qat.js'
import { createIntelNicDriver } from '../intel-nic/intel-nic.js'
import { runClean } from '../clean.js'
import { overriddenProbe, pciTarget } from '../clean-test-support.js'
import type { AcceleratorDriver, DriverDeps } from '../driver.js'

const FIXTURE = new URL('../__fixtures__/pci/clean-flr', import.meta.url).pathname
const DEV = '/sys/bus/pci/devices'

const factories: Record<
  string,
  (deps: DriverDeps, o?: Record<string, string>) => AcceleratorDriver
> = { pci: createPciDriver, 'intel-qat': createIntelQatDriver, 'intel-nic': createIntelNicDriver }

for (const [name, create] of Object.entries(factories)) {
  void describe(`${name}: clean by function-level reset`, () => {
    void it('writes 1 to the handle’s sysfs reset, then verifies ids and the vfio binding', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      const driver = create({ host, hostname: 'h' })
      const report = await runClean(driver, pciTarget('0000:3b:00.0', '0000:3b:00.1'))
      assert.deepEqual(host.writes, [{ path: `${DEV}/0000:3b:00.0/reset`, data: '1' }])
      assert.deepEqual(host.execs, [])
      assert.equal(report.method, 'pci-flr')
      assert.equal(
        report.evidence,
        `0000:3b:00.0 8086:154c vfio-pci bound\nreset_method: flr bus\nwrote 1 to ${DEV}/0000:3b:00.0/reset`,
      )
      assert.equal(report.verifyEvidence, '0000:3b:00.0 present, ids 8086:154c, vfio-pci bound')
      assert.equal(driver.cleanSettings?.timeoutMs, 60_000)
    })

    void it('refuses a function without a reset method (no reset file), writing nothing', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      await assert.rejects(runClean(create({ host, hostname: 'h' }), pciTarget('0000:5e:00.0')), {
        name: 'DriverError',
        code: 'CLEAN_UNSUPPORTED',
        message: new RegExp(`${name}: PCI function 0000:5e:00.0 has no reset method`),
      })
      assert.deepEqual(host.writes, [])
    })

    void it('fails on a function that is gone, and on a handle that names none', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      const driver = create({ host, hostname: 'h' })
      await assert.rejects(runClean(driver, pciTarget('0000:99:00.0')), { code: 'CLEAN_FAILED' })
      const bad = { ...pciTarget('0000:3b:00.0'), handle: { type: 'PCI' as const, info: {} } }
      await assert.rejects(runClean(driver, bad), { code: 'CLEAN_TARGET_INVALID' })
      assert.deepEqual(host.writes, [])
    })

    void it('verify fails when the ids change, the function goes, or vfio-pci lets go', async () => {
      const base = createFixtureHostProbe(FIXTURE)
      const cases: [Record<string, string | undefined>, RegExp][] = [
        [{ [`${DEV}/0000:3b:00.0/device`]: '0x1889\n' }, /ids read back 8086:1889, were 8086:154c/],
        [{ [`${DEV}/0000:3b:00.0/vendor`]: undefined }, /the function is gone/],
        [
          { '/sys/bus/pci/drivers/vfio-pci/0000:3b:00.0': undefined },
          /no longer bound to vfio-pci/,
        ],
      ]
      for (const [files, message] of cases) {
        const driver = create({ host: base, hostname: 'h' })
        const cleaned = await driver.clean!(pciTarget('0000:3b:00.0'), {})
        const after = create({ host: overriddenProbe(base, files), hostname: 'h' })
        await assert.rejects(after.verify!(pciTarget('0000:3b:00.0'), cleaned, {}), {
          code: 'VERIFY_FAILED',
          message,
        })
      }
    })

    void it('a function not bound to vfio-pci may be probed by a host driver again', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      const report = await runClean(create({ host, hostname: 'h' }), pciTarget('0000:3b:00.1'))
      assert.equal(report.verifyEvidence, '0000:3b:00.1 present, ids 8086:154c, vfio-pci unbound')
    })

    void it('clean = none writes nothing; clean_timeout sets the limit', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      const none = create({ host, hostname: 'h' }, { clean: 'none' })
      assert.equal((await runClean(none, pciTarget('0000:3b:00.0'))).method, 'none')
      assert.deepEqual(host.writes, [])
      const quick = create({ host, hostname: 'h' }, { clean_timeout: '7' })
      assert.deepEqual(quick.cleanSettings, { policy: 'auto', timeoutMs: 7000 })
      assert.throws(() => create({ host, hostname: 'h' }, { clean: 'never' }), {
        name: 'ConfigError',
      })
    })

    void it('times out when the write hangs (CLEAN_TIMEOUT)', async () => {
      const host = createFixtureHostProbe(FIXTURE)
      const stuck = { ...host, writeFile: () => new Promise<void>(() => {}) }
      const driver = create({ host: stuck, hostname: 'h' }, { clean_timeout: '1' })
      await assert.rejects(runClean(driver, pciTarget('0000:3b:00.0'), { timeoutMs: 20 }), {
        code: 'CLEAN_TIMEOUT',
      })
    })
  })
}
