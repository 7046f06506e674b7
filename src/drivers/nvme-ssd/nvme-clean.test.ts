import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFixtureHostProbe, type FixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createNvmeSsdDriver } from './nvme-ssd.js'
import { chooseErase, parseIdCtrl, parseSanitizeLog } from './nvme-clean.js'
import { runClean } from '../clean.js'
import { commandFailed, commandMissing, overriddenProbe, pciTarget } from '../clean-test-support.js'

const FIXTURE = new URL('../__fixtures__/nvme-ssd/clean', import.meta.url).pathname
const lines = (host: FixtureHostProbe) => host.execs.map((e) => [e.command, ...e.args].join(' '))
const LOG0 = 'nvme sanitize-log /dev/nvme0 -o json'
const log = (sstat: number, sprog = 0) => JSON.stringify({ nvme0: { sprog, sstat } })
const driverOn = (host: Parameters<typeof createNvmeSsdDriver>[0]['host'], o = {}) =>
  createNvmeSsdDriver({ host, hostname: 'h' }, { sanitize_poll_ms: '1', ...o })

void describe('nvme-ssd: parsers', () => {
  void it('chooses block erase, then crypto erase, then overwrite, then a format', () => {
    const c = (sanicap: number, oacs = 0, fna = 0) => chooseErase({ sanicap, oacs, fna })
    assert.deepEqual(c(0b111), { kind: 'sanitize', sanact: 2 })
    assert.deepEqual(c(0b101), { kind: 'sanitize', sanact: 4 })
    assert.deepEqual(c(0b100), { kind: 'sanitize', sanact: 3 })
    assert.deepEqual(c(0, 0b10, 0b100), { kind: 'format', ses: 2 })
    assert.deepEqual(c(0, 0b10, 0), { kind: 'format', ses: 1 })
    assert.equal(c(0, 0b01, 0b100), undefined)
  })

  void it('reads id-ctrl and both layouts of the sanitize log; garbage is undefined', () => {
    assert.deepEqual(parseIdCtrl('{"oacs":14,"fna":4,"sanicap":0}'), {
      sanicap: 0,
      oacs: 14,
      fna: 4,
    })
    assert.equal(parseIdCtrl('{"vid":1}'), undefined)
    assert.equal(parseIdCtrl('nope'), undefined)
    assert.deepEqual(parseSanitizeLog('{"nvme0":{"sprog":32768,"sstat":2}}'), {
      status: 2,
      progress: 0.5,
    })
    assert.deepEqual(parseSanitizeLog('{"sprog":65535,"sstat":257}')?.status, 1)
    assert.equal(parseSanitizeLog('{"nvme0":{}}'), undefined)
  })
})

void describe('nvme-ssd: clean', () => {
  void it('sanitizes with block erase when sanicap allows, polling the log until done', async () => {
    const base = createFixtureHostProbe(FIXTURE, {
      outputs: { 'nvme sanitize /dev/nvme0 --sanact=2': '' },
    })
    const host = overriddenProbe(
      base,
      {},
      { [LOG0]: [log(2, 100), log(2, 40000), log(257, 65535)] },
    )
    const report = await runClean(driverOn(host), pciTarget('0000:5e:00.0'))
    assert.deepEqual(lines(base), [
      'nvme id-ctrl /dev/nvme0 -o json',
      'nvme sanitize /dev/nvme0 --sanact=2',
      LOG0,
      LOG0,
      LOG0,
      LOG0,
    ])
    assert.equal(base.execs[1]!.options?.timeoutMs, 3_600_000)
    assert.deepEqual(base.writes, [])
    assert.equal(report.method, 'nvme-sanitize')
    assert.match(report.evidence, /^\/dev\/nvme0 \(0000:5e:00.0\): sanicap 2, oacs 23, fna 0\n/)
    assert.match(report.verifyEvidence!, /"sstat":257/)
  })

  void it('verifies the recorded sanitize log (nvme-cli 2.x layout)', async () => {
    const host = createFixtureHostProbe(FIXTURE, {
      outputs: { 'nvme sanitize /dev/nvme0 --sanact=2': '' },
    })
    const report = await runClean(driverOn(host), pciTarget('0000:5e:00.0'))
    assert.match(report.verifyEvidence!, /^\$ nvme sanitize-log \/dev\/nvme0 -o json\n\{/)
  })

  void it('a sanitize that the log reports failed is CLEAN_FAILED; a later bad log fails verify', async () => {
    const base = createFixtureHostProbe(FIXTURE, {
      outputs: { 'nvme sanitize /dev/nvme0 --sanact=2': '' },
    })
    await assert.rejects(
      runClean(
        driverOn(overriddenProbe(base, {}, { [LOG0]: [log(3)] })),
        pciTarget('0000:5e:00.0'),
      ),
      { code: 'CLEAN_FAILED', message: /sanitize of \/dev\/nvme0 failed/ },
    )
    const cleaned = await driverOn(base).clean!(pciTarget('0000:5e:00.0'), {})
    const after = overriddenProbe(base, {}, { [LOG0]: [log(0)] })
    await assert.rejects(driverOn(after).verify!(pciTarget('0000:5e:00.0'), cleaned, {}), {
      code: 'VERIFY_FAILED',
      message: /sanitize status 0/,
    })
  })

  void it('formats each namespace with crypto erase when only Format NVM is supported', async () => {
    const line = 'nvme format /dev/nvme1n1 --ses=2 --force'
    const host = createFixtureHostProbe(FIXTURE, {
      outputs: { [line]: 'Success formatting namespace:1\n' },
    })
    const report = await runClean(driverOn(host), pciTarget('0000:d8:00.0'))
    assert.deepEqual(lines(host), ['nvme id-ctrl /dev/nvme1 -o json', line])
    assert.equal(report.method, 'nvme-format-ses')
    assert.equal(
      report.evidence,
      `/dev/nvme1 (0000:d8:00.0): sanicap 0, oacs 14, fna 4\n$ ${line}\nSuccess formatting namespace:1`,
    )
    assert.equal(
      report.verifyEvidence,
      'nvme1 serial PHLJ912300AB4P0DGN, namespaces nvme1n1 present',
    )
  })

  void it('verify of a format fails when a namespace or the controller’s serial changed', async () => {
    const line = 'nvme format /dev/nvme1n1 --ses=2 --force'
    const base = createFixtureHostProbe(FIXTURE, { outputs: { [line]: '' } })
    const cleaned = await driverOn(base).clean!(pciTarget('0000:d8:00.0'), {})
    const other = overriddenProbe(base, { '/sys/class/nvme/nvme1/serial': 'OTHER\n' })
    await assert.rejects(driverOn(other).verify!(pciTarget('0000:d8:00.0'), cleaned, {}), {
      code: 'VERIFY_FAILED',
      message: /serial reads OTHER/,
    })
    const lost = { ...cleaned, state: { ...cleaned.state, namespaces: 'nvme1n1,nvme1n2' } }
    await assert.rejects(driverOn(base).verify!(pciTarget('0000:d8:00.0'), lost, {}), {
      code: 'VERIFY_FAILED',
      message: /namespaces missing: nvme1n2/,
    })
  })

  void it('refuses a controller that supports neither, and a host without nvme-cli', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    await assert.rejects(runClean(driverOn(host), pciTarget('0000:00:04.0')), {
      code: 'CLEAN_UNSUPPORTED',
      message: /reports neither sanitize \(sanicap\) nor Format NVM \(oacs\)/,
    })
    assert.deepEqual(lines(host), ['nvme id-ctrl /dev/nvme2 -o json'])
    const noCli = overriddenProbe(host, {}, {}, { nvme: commandMissing('nvme') })
    await assert.rejects(runClean(driverOn(noCli), pciTarget('0000:5e:00.0')), {
      code: 'CLEAN_UNSUPPORTED',
      message: /nvme-cli is not installed/,
    })
    const refused = overriddenProbe(
      host,
      {},
      {},
      {
        'nvme sanitize /dev/nvme0 --sanact=2': commandFailed('nvme', 1, 'INVALID_FIELD'),
      },
    )
    await assert.rejects(runClean(driverOn(refused), pciTarget('0000:5e:00.0')), {
      code: 'CLEAN_FAILED',
    })
  })

  void it('fails for an address with no controller; clean = none runs nothing', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    await assert.rejects(runClean(driverOn(host), pciTarget('0000:99:00.0')), {
      code: 'CLEAN_FAILED',
      message: /no NVMe controller at 0000:99:00.0/,
    })
    const none = await runClean(driverOn(host, { clean: 'none' }), pciTarget('0000:5e:00.0'))
    assert.equal(none.method, 'none')
    assert.deepEqual(host.execs, [])
  })

  void it('a sanitize that never finishes times out', async () => {
    const base = createFixtureHostProbe(FIXTURE, {
      outputs: { 'nvme sanitize /dev/nvme0 --sanact=2': '' },
    })
    const host = overriddenProbe(base, {}, { [LOG0]: [log(2, 10)] })
    await assert.rejects(runClean(driverOn(host), pciTarget('0000:5e:00.0'), { timeoutMs: 50 }), {
      code: 'CLEAN_TIMEOUT',
    })
  })
})
