import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CYBORG_NAMESPACE, deployableRpUuid, newUuid, uuidV5 } from './ids.js'
import { InvalidInputError } from './errors.js'

const NAMESPACE_DNS = '6ba7b810-9dad-11d1-80b4-00c04fd430c8'

await test('uuidV5 matches known vectors', () => {
  // Python: uuid.uuid5(uuid.NAMESPACE_DNS, 'python.org')
  assert.equal(uuidV5('python.org', NAMESPACE_DNS), '886313e1-3b8a-5372-9b90-0c9aee199e5d')
  // Python: uuid.uuid5(uuid.NAMESPACE_DNS, 'www.example.com')
  assert.equal(uuidV5('www.example.com', NAMESPACE_DNS), '2ed6657d-e927-568b-95e1-2665a8aea6a2')
})

await test('uuidV5 rejects a namespace that is not a UUID', () => {
  assert.throws(() => uuidV5('x', 'not-a-uuid'), InvalidInputError)
})

await test('deployableRpUuid is deterministic and distinct across hosts and names', () => {
  const a = deployableRpUuid('host1', 'host1_0000:3b:00.0')
  assert.equal(a, deployableRpUuid('host1', 'host1_0000:3b:00.0'))
  assert.notEqual(a, deployableRpUuid('host2', 'host1_0000:3b:00.0'))
  assert.notEqual(deployableRpUuid('a_b', 'c'), deployableRpUuid('a', 'b_c'))
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.match(CYBORG_NAMESPACE, /^[0-9a-f-]{36}$/)
})

await test('newUuid gives distinct v4 uuids', () => {
  const a = newUuid()
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.notEqual(a, newUuid())
})
