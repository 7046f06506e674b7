/**
 * The parts of /healthcheck that need no database: content negotiation, `?detailed`, the bodies,
 * and the probe's cache, single flight and time limit. The checks over a real database (and a
 * PostgreSQL that hangs) are in test/api/healthcheck.test.ts.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { negotiate, renderHealth, wantsDetails, type CheckResult } from './healthcheck.js'
import { createProbe } from './health-probe.js'

void describe('negotiate (oslo.middleware: text/plain, then application/json)', () => {
  void it('prefers text/plain unless the client ranks JSON higher', () => {
    const cases: [string | undefined, string][] = [
      [undefined, 'text/plain'],
      ['', 'text/plain'],
      ['*/*', 'text/plain'],
      ['application/json', 'application/json'],
      ['application/json, text/plain', 'text/plain'],
      ['text/plain;q=0.5, application/json', 'application/json'],
      ['application/*', 'application/json'],
      ['text/html', 'text/plain'], // nothing acceptable: plain text, never 406
      ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'text/plain'],
      ['APPLICATION/JSON; charset=utf-8', 'application/json'],
      ['*/*;q=0.1, application/json;q=0.2', 'application/json'],
      ['text/plain;q=0, */*', 'application/json'],
      ['application/json;q=nonsense, */*;q=0.5', 'text/plain'],
    ]
    for (const [accept, expected] of cases) assert.equal(negotiate(accept), expected, accept)
  })
})

void describe('wantsDetails', () => {
  void it('reads ?detailed as a flag', () => {
    assert.equal(wantsDetails({}), false)
    assert.equal(wantsDetails(undefined), false)
    for (const v of ['', 'true', '1', 'yes', 'TRUE', ['false', 'true']])
      assert.equal(wantsDetails({ detailed: v }), true, String(v))
    for (const v of ['false', '0', 'no', 'off', 'False'])
      assert.equal(wantsDetails({ detailed: v }), false, v)
  })
})

void describe('renderHealth', () => {
  const ok: CheckResult[] = [
    { name: 'DatabaseCheck', available: true, reason: 'OK', details: 'answered in 1 ms' },
    { name: 'MessageBusCheck', available: true, reason: 'OK', details: 'in-process' },
    { name: 'ConductorCheck', available: true, reason: 'OK', details: '1 of 1 conductor(s)' },
  ]
  const bad: CheckResult[] = [
    { name: 'DatabaseCheck', available: false, reason: 'database unavailable', details: 'boom' },
    ok[1]!,
    { name: 'ConductorCheck', available: false, reason: 'conductor state unknown', details: 'x' },
  ]
  const at = Date.parse('2026-01-02T03:04:05.678Z')

  void it('plain text: OK, or the failing reasons one per line; detailed: every check', () => {
    assert.equal(renderHealth(ok, { format: 'text/plain', detailed: false, at }), 'OK')
    assert.equal(
      renderHealth(bad, { format: 'text/plain', detailed: false, at }),
      'database unavailable\nconductor state unknown',
    )
    assert.equal(
      renderHealth(bad, { format: 'text/plain', detailed: true, at }),
      'DatabaseCheck: database unavailable (boom)\nMessageBusCheck: OK (in-process)\nConductorCheck: conductor state unknown (x)',
    )
  })

  void it('JSON in both of oslo.middleware’s shapes', () => {
    assert.deepEqual(renderHealth(ok, { format: 'application/json', detailed: false, at }), {
      detailed: false,
      reasons: ['OK'],
    })
    assert.deepEqual(renderHealth(bad, { format: 'application/json', detailed: false, at }), {
      detailed: false,
      reasons: ['database unavailable', 'conductor state unknown'],
    })
    assert.deepEqual(renderHealth(bad, { format: 'application/json', detailed: true, at }), {
      detailed: true,
      now: '2026-01-02T03:04:05.678000+00:00',
      reasons: [
        { reason: 'database unavailable', details: 'boom', class: 'DatabaseCheck' },
        { reason: 'OK', details: 'in-process', class: 'MessageBusCheck' },
        { reason: 'conductor state unknown', details: 'x', class: 'ConductorCheck' },
      ],
    })
  })
})

void describe('createProbe', () => {
  const clock = () => {
    let ms = 1_000_000
    return { now: () => ms, advance: (d: number) => void (ms += d) }
  }

  void it('reuses an outcome for cacheMs, and shares one read among concurrent callers', async () => {
    const c = clock()
    let reads = 0
    const probe = createProbe(async () => ++reads, { cacheMs: 1000, now: c.now })
    const burst = await Promise.all(Array.from({ length: 50 }, () => probe.get()))
    assert.equal(reads, 1)
    assert.ok(burst.every((o) => o.ok && o.value === 1))
    c.advance(999)
    assert.deepEqual(await probe.get(), burst[0])
    c.advance(1)
    const next = await probe.get()
    assert.equal(next.ok && next.value, 2)
    assert.equal(reads, 2)
  })

  void it('a rejected read is a failed outcome with its message, cached like a success', async () => {
    const c = clock()
    let reads = 0
    const probe = createProbe(
      async () => {
        reads += 1
        throw new Error('connection refused')
      },
      { now: c.now },
    )
    assert.deepEqual(await probe.get(), { ok: false, error: 'connection refused' })
    assert.deepEqual(await probe.get(), { ok: false, error: 'connection refused' })
    assert.equal(reads, 1)
  })

  void it('a read that hangs fails the probe after timeoutMs, and is not started again while it hangs', async () => {
    const c = clock()
    let reads = 0
    let hang = true
    let answer!: (v: string) => void
    const probe = createProbe(
      () => {
        reads += 1
        return hang
          ? new Promise<string>((resolve) => (answer = resolve))
          : Promise.resolve('fresh')
      },
      { cacheMs: 1000, timeoutMs: 30, now: c.now },
    )
    const started = Date.now()
    assert.deepEqual(await probe.get(), { ok: false, error: 'no answer within 30 ms' })
    assert.ok(Date.now() - started < 1000)
    c.advance(5000)
    const again = await probe.get()
    assert.equal(again.ok, false)
    assert.equal(!again.ok && again.error, 'no answer within 30 ms (the read has been waiting 5 s)')
    assert.equal(reads, 1)
    // Once the hung read settles, the next probe reads afresh.
    hang = false
    answer('late')
    await new Promise((r) => setImmediate(r))
    c.advance(1000)
    const recovered = await probe.get()
    assert.equal(recovered.ok && recovered.value, 'fresh')
    assert.equal(reads, 2)
  })
})
