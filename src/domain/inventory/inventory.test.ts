import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { canonicalJson } from './inventory.js'

void describe('canonicalJson', () => {
  void it('sorts keys at every level and writes what JSON.stringify writes', () => {
    const v = { b: [3, { z: 1, a: [null, undefined, 'x'] }], a: { d: undefined, c: true }, e: 1.5 }
    assert.equal(canonicalJson(v), '{"a":{"c":true},"b":[3,{"a":[null,null,"x"],"z":1}],"e":1.5}')
    for (const x of [null, 1, 'x', true, [], {}, [[]], [{}], { a: {} }, { a: [] }])
      assert.equal(canonicalJson(x), JSON.stringify(x))
    assert.equal(canonicalJson(undefined), undefined)
    assert.equal(canonicalJson({ '"k\n': 'v"' }), JSON.stringify({ '"k\n': 'v"' }))
  })

  void it('nesting of 100,000 levels does not overflow the stack (issue 27)', () => {
    let deep: unknown = {}
    for (let i = 0; i < 100_000; i++) deep = { a: deep, b: [i] }
    const text = canonicalJson(deep)
    assert.ok(text.startsWith('{"a":{"a":'))
    assert.ok(text.endsWith(',"b":[99999]}'))
  })

  void it('a cycle is a TypeError, not a hang', () => {
    const a: Record<string, unknown> = {}
    a.self = [a]
    assert.throws(() => canonicalJson(a), TypeError)
    const shared = { x: 1 }
    assert.equal(canonicalJson([shared, shared]), '[{"x":1},{"x":1}]')
  })
})
