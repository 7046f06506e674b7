import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import fc from 'fast-check'
import { judgeQatState, qatStateHealth, readQatState } from './qat-health.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'

const fixture = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-qat', 'state-down')
const pf = (a: string) => `/sys/bus/pci/devices/${a}`

void describe('qat-health: judgeQatState', () => {
  void it('up is healthy, down is failed, no file is no finding', () => {
    assert.equal(judgeQatState('up\n'), undefined)
    assert.equal(judgeQatState(' UP '), undefined)
    assert.deepEqual(judgeQatState('down\n'), { state: 'failed', reason: 'QAT device state down' })
    assert.equal(judgeQatState(undefined), undefined)
  })

  void it('an unreadable or unknown state is unknown (fenced), shown safely', () => {
    assert.deepEqual(judgeQatState(null), {
      state: 'unknown',
      reason: 'QAT device state unreadable',
    })
    assert.deepEqual(judgeQatState('restarting\n'), {
      state: 'unknown',
      reason: "QAT device state 'restarting' not understood",
    })
    assert.deepEqual(judgeQatState('\n'), { state: 'unknown', reason: 'QAT device state empty' })
    assert.deepEqual(judgeQatState('b\u0000d'), {
      state: 'unknown',
      reason: "QAT device state 'b?d' not understood",
    })
  })

  void it('any text gives a short reason (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const h = judgeQatState(text)
        assert.ok(h === undefined || (h.reason !== undefined && h.reason.length <= 80))
      }),
    )
  })
})

void describe('qat-health: reading sysfs', () => {
  const host = createFixtureHostProbe(fixture)

  void it('reads qat/state of the fixture PFs', async () => {
    assert.equal(await readQatState(host, pf('0000:6b:00.0')), 'down\n')
    assert.equal(await readQatState(host, pf('0000:e8:00.0')), 'up\n')
    assert.equal(await readQatState(host, pf('0000:3d:00.0')), undefined) // C62x: no file
    assert.deepEqual(await qatStateHealth(host, pf('0000:6b:00.0')), {
      state: 'failed',
      reason: 'QAT device state down',
    })
    assert.equal(await qatStateHealth(host, pf('0000:3d:00.0')), undefined)
  })

  void it('a state that exists but cannot be read is unknown', async () => {
    // qat/state is a directory here: it exists, and reading it fails
    const mem = createMemoryHostProbe({ [`${pf('0000:6b:00.0')}/qat/state/x`]: '' })
    assert.equal(await readQatState(mem, pf('0000:6b:00.0')), null)
    assert.deepEqual(await qatStateHealth(mem, pf('0000:6b:00.0')), {
      state: 'unknown',
      reason: 'QAT device state unreadable',
    })
  })
})
