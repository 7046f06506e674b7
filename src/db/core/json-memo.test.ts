import { test } from 'node:test'
import assert from 'node:assert/strict'
import { jsonMemo } from './json-memo.js'

void test('jsonMemo parses each text once and shares a deeply frozen value', () => {
  const parse = jsonMemo<{ groups: Record<string, string>[] }>()
  const text = '{"groups":[{"resources:FPGA":"1","trait:CUSTOM_X":"required"}]}'
  const a = parse(text)
  assert.deepEqual(a, JSON.parse(text))
  assert.equal(parse(`${text}`), a, 'the same text gives the same value')
  assert.deepEqual(
    Object.keys(a.groups[0]!),
    ['resources:FPGA', 'trait:CUSTOM_X'],
    'key order kept',
  )
  assert.ok(Object.isFrozen(a) && Object.isFrozen(a.groups) && Object.isFrozen(a.groups[0]))
  assert.throws(() => {
    a.groups[0]!['resources:FPGA'] = '2'
  }, TypeError)
  assert.notEqual(parse('{"groups":[]}'), a)
})

void test('jsonMemo stays bounded and keeps answering after it starts over', () => {
  const parse = jsonMemo<number[]>(2)
  const one = parse('[1]')
  parse('[2]')
  parse('[3]')
  const again = parse('[1]')
  assert.deepEqual(again, [1])
  assert.notEqual(again, one, 'parsed anew after the memo started over')
  assert.throws(() => parse('{'), SyntaxError)
})
