import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { upToPattern } from './v2/schemas/device-profile-body.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'

/**
 * `POST /v2/device_profiles` through the route: its body schema (v2/schemas/device-profile-body.ts)
 * and the domain's normalisation (normalizeDeviceProfile). The conductor echoes the profile back,
 * so a valid body is a 201 showing what would be stored; its own rules are tested in test/api.
 */
const dp = (fields: Record<string, unknown>) => [
  { name: 'dp1', groups: [{ 'resources:FPGA': '1' }], ...fields },
]
const group = (g: Record<string, unknown>) => dp({ groups: [g] })

let t: TestApp
before(async () => {
  const conductor = {
    createDeviceProfile: async (req: Parameters<ConductorRpc['createDeviceProfile']>[0]) => ({
      id: 1,
      uuid: req.uuid ?? '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11',
      name: req.name,
      description: req.description,
      groups: req.groups,
      createdAt: '2026-01-01T00:00:00.000000+00:00',
      updatedAt: null,
    }),
  } as unknown as ConductorRpc
  t = await createTestApp({}, conductor)
})
after(() => t.close())

/** Posts `payload` (JSON text) as the body. */
const post = (payload: string) =>
  t.app.inject({
    method: 'POST',
    url: '/v2/device_profiles',
    headers: { 'content-type': 'application/json' },
    payload,
  })

/** The stored fields of a 201 (the conductor's echo). */
async function created(body: unknown) {
  const res = await post(JSON.stringify(body))
  assert.equal(res.statusCode, 201, res.body)
  const { name, description, groups, uuid } = res.json()
  return { name, description, groups, uuid }
}

/** The faultstring of a 400. */
async function refused(body: unknown): Promise<string> {
  const res = await post(JSON.stringify(body))
  assert.equal(res.statusCode, 400, res.body)
  return faultOf(res.body).faultstring
}

void describe('POST /v2/device_profiles: accepted and normalised', () => {
  const cases: [string, unknown, unknown][] = [
    [
      'the CLI body',
      [
        {
          groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required' }],
          description: null,
          name: 'my-dp_1',
        },
      ],
      {
        name: 'my-dp_1',
        description: null,
        groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required' }],
        uuid: '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11',
      },
    ],
    [
      'integer values become strings',
      group({ 'resources:GPU': 2, 'resources:CUSTOM_ACCEL_X': 1.0 }),
      {
        name: 'dp1',
        description: null,
        groups: [{ 'resources:GPU': '2', 'resources:CUSTOM_ACCEL_X': '1' }],
        uuid: '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11',
      },
    ],
    [
      'uuid (lower-cased), description, accel keys, forbidden trait, several groups',
      [
        {
          name: 'X',
          uuid: '0B0E5FD4-6F4A-4D2B-9D1C-9A5A3F7D2E11',
          description: 'd',
          groups: [
            { 'resources:VGPU': ' 3 ', 'trait: CUSTOM_A ': 'forbidden' },
            { 'resources:PGPU': '1', 'accel:bitstream_id': 'b', 'accel:function_id': 7 },
          ],
        },
      ],
      {
        name: 'X',
        description: 'd',
        uuid: '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11',
        groups: [
          { 'resources:VGPU': '3', 'trait:CUSTOM_A': 'forbidden' },
          { 'resources:PGPU': '1', 'accel:bitstream_id': 'b', 'accel:function_id': '7' },
        ],
      },
    ],
  ]
  for (const [name, body, expected] of cases) {
    void it(name, async () => assert.deepEqual(await created(body), expected))
  }
})

void describe('POST /v2/device_profiles: more accepted bodies', () => {
  const only = (g: Record<string, unknown>) => async () =>
    (await created(group(g))).groups[0] as Record<string, string>
  void it('amounts: the largest, padded with zeros and spaces, as a number', async () => {
    assert.deepEqual(await only({ 'resources:FPGA': '2147483647' })(), {
      'resources:FPGA': '2147483647',
    })
    assert.deepEqual(await only({ 'resources:FPGA': ' 0007 ' })(), { 'resources:FPGA': '7' })
    assert.deepEqual(await only({ 'resources:FPGA': 2147483647 })(), {
      'resources:FPGA': '2147483647',
    })
  })
  void it('uuid and description may be null; a key of 255 characters; a numeric accel value', async () => {
    const got = await created(dp({ uuid: null, description: null }))
    assert.equal(got.description, null)
    const long = `resources:CUSTOM_${'A'.repeat(255 - 'resources:CUSTOM_'.length)}`
    assert.deepEqual(await only({ [long]: 1 })(), { [long]: '1' })
    assert.deepEqual(await only({ 'resources:FPGA': 1, 'accel:function_id': 1.5 })(), {
      'resources:FPGA': '1',
      'accel:function_id': '1.5',
    })
  })
})

void describe("POST /v2/device_profiles: rejected naming the field, in Cyborg's words", () => {
  const ONE = 'expected a JSON list with exactly one device profile'
  const AMOUNT = 'the amount must be a positive integer (at most 2147483647)'
  const FPGA = `groups[0]["resources:FPGA"]`
  const cases: [string, unknown, string, string][] = [
    ['an object instead of a list', { name: 'a', groups: [] }, 'body', `${ONE}, got an object`],
    ['null', null, 'body', `${ONE}, got null`],
    ['an empty list', [], 'body', `${ONE}, got a list of 0`],
    ['two profiles', [dp({})[0], dp({ name: 'b' })[0]], 'body', `${ONE}, got a list of 2`],
    ['a list of a string', ['x'], 'body[0]', 'expected a JSON object, got a string'],
    ['a missing name', [{ groups: [{ 'resources:FPGA': '1' }] }], 'name', 'required'],
    ['an empty name', dp({ name: '' }), 'name', 'must not be empty'],
    ['a long name', dp({ name: 'a'.repeat(256) }), 'name', 'must be at most 255 characters'],
    [
      'a name with a space',
      dp({ name: 'a b' }),
      'name',
      'may contain only letters, digits, "-" and "_"',
    ],
    ['a numeric name', dp({ name: 5 }), 'name', 'expected a string, got a number'],
    ['missing groups', [{ name: 'a' }], 'groups', 'required'],
    ['groups not a list', dp({ groups: {} }), 'groups', 'expected a list of groups, got an object'],
    ['no groups', dp({ groups: [] }), 'groups', 'must contain at least one group'],
    [
      'a group that is a list',
      dp({ groups: [[]] }),
      'groups[0]',
      'expected a JSON object of string values, got a list of 0',
    ],
    [
      'an empty group',
      dp({ groups: [{ 'resources:FPGA': '1' }, {}] }),
      'groups[1]',
      'must contain at least one key',
    ],
    [
      'an unknown prefix',
      group({ 'foo:bar': 'x' }),
      'groups[0]["foo:bar"]',
      'keys must start with "resources:", "trait:" or "accel:"',
    ],
    [
      'a key with a slash',
      group({ 'a/b~c': 'x' }),
      'groups[0]["a/b~c"]',
      'keys must start with "resources:", "trait:" or "accel:"',
    ],
    [
      'a key of 256 characters',
      group({ [`resources:CUSTOM_${'A'.repeat(256 - 'resources:CUSTOM_'.length)}`]: '1' }),
      `groups[0]["resources:CUSTOM_${'A'.repeat(256 - 'resources:CUSTOM_'.length)}"]`,
      'keys must be at most 255 characters',
    ],
    [
      'a standard trait',
      group({ 'trait:HW_CPU_X86_AVX': 'required' }),
      'groups[0]["trait:HW_CPU_X86_AVX"]',
      'trait names must start with CUSTOM_ followed by A-Z, 0-9 and _',
    ],
    [
      'a lower-case custom trait',
      group({ 'trait:CUSTOM_a': 'required' }),
      'groups[0]["trait:CUSTOM_a"]',
      'trait names must start with CUSTOM_ followed by A-Z, 0-9 and _',
    ],
    [
      'a trait value',
      group({ 'trait:CUSTOM_A': 'maybe' }),
      'groups[0]["trait:CUSTOM_A"]',
      'the value must be "required" or "forbidden", got "maybe"',
    ],
    [
      'an unknown RC',
      group({ 'resources:TPU': '1' }),
      'groups[0]["resources:TPU"]',
      'unknown resource class in "resources:TPU": RC_LIST',
    ],
    [
      'an empty RC',
      group({ 'resources:': '1' }),
      'groups[0]["resources:"]',
      'unknown resource class in "resources:": RC_LIST',
    ],
    ['amount 0', group({ 'resources:FPGA': '0' }), FPGA, `${AMOUNT}, got "0"`],
    ['a negative amount', group({ 'resources:FPGA': -1 }), FPGA, `${AMOUNT}, got -1`],
    ['a fractional amount', group({ 'resources:FPGA': 1.5 }), FPGA, `${AMOUNT}, got 1.5`],
    ['a non-numeric amount', group({ 'resources:FPGA': 'one' }), FPGA, `${AMOUNT}, got "one"`],
    [
      'one over the largest amount',
      group({ 'resources:FPGA': '2147483648' }),
      FPGA,
      `${AMOUNT}, got "2147483648"`,
    ],
    [
      'one over the largest amount, as a number',
      group({ 'resources:FPGA': 2147483648 }),
      FPGA,
      `${AMOUNT}, got 2147483648`,
    ],
    [
      'a huge amount',
      group({ 'resources:FPGA': '99999999999' }),
      FPGA,
      `${AMOUNT}, got "99999999999"`,
    ],
    ['a null value', group({ 'resources:FPGA': null }), FPGA, `${AMOUNT}, got null`],
    [
      'a boolean value',
      group({ 'accel:bitstream_id': true }),
      'groups[0]["accel:bitstream_id"]',
      'the value must be 1 to 255 characters, got a boolean',
    ],
    [
      'an unknown accel key',
      group({ 'accel:colour': 'red' }),
      'groups[0]["accel:colour"]',
      'unknown accel key: expected one of accel:bitstream_id, accel:function_id',
    ],
    [
      'an empty accel value',
      group({ 'accel:function_id': '' }),
      'groups[0]["accel:function_id"]',
      'the value must be 1 to 255 characters, got a string',
    ],
    [
      'duplicate trait keys after trimming',
      group({ 'trait:CUSTOM_A': 'required', 'trait: CUSTOM_A': 'forbidden' }),
      'groups[0]["trait: CUSTOM_A"]',
      'duplicates the key "trait:CUSTOM_A"',
    ],
    [
      'a bad uuid',
      dp({ uuid: 'nope' }),
      'uuid',
      'expected a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got "nope"',
    ],
    [
      'a numeric description',
      dp({ description: 1 }),
      'description',
      'expected a string or null, got a number',
    ],
    [
      'a long description',
      dp({ description: 'd'.repeat(256) }),
      'description',
      'must be at most 255 characters',
    ],
    [
      'an unknown field',
      dp({ created_at: 'now' }),
      'created_at',
      'unknown field (allowed: name, groups, uuid, description)',
    ],
  ]
  for (const [name, body, field, problem] of cases) {
    void it(name, async () => {
      assert.equal(
        await refused(body),
        `Invalid input for field '${field}': ` +
          `${problem.replace('RC_LIST', 'expected one of FPGA, GPU, VGPU, PGPU, CUSTOM_QAT, CUSTOM_NIC, CUSTOM_SSD or CUSTOM_ followed by A-Z, 0-9 and _')}`,
      )
    })
  }

  void it('an absent body is named', async () => {
    const res = await post('')
    assert.equal(res.statusCode, 400)
    assert.match(faultOf(res.body).faultstring, /^Invalid input for field 'body': /)
  })
})

/** Bodies that are often nearly valid, so that the fuzzing reaches the deep checks. */
const keyArb = fc.oneof(
  fc.constantFrom(
    'resources:FPGA',
    'resources:CUSTOM_X',
    'trait:CUSTOM_A',
    'trait: CUSTOM_A',
    'accel:bitstream_id',
    'accel:x',
  ),
  fc.string(),
)
const valueArb = fc.oneof(
  fc.constantFrom('1', 'required', 'forbidden', 0, 2, -3, 1.5),
  fc.jsonValue(),
)
const bodyArb = fc.oneof(
  fc.jsonValue(),
  fc.array(
    fc.record(
      {
        name: fc.oneof(fc.stringMatching(/^[a-z0-9_-]{1,8}$/), fc.jsonValue()),
        groups: fc.oneof(
          fc.array(fc.dictionary(keyArb, valueArb, { maxKeys: 4 }), { maxLength: 3 }),
          fc.jsonValue(),
        ),
        description: fc.oneof(fc.constant(null), fc.string(), fc.jsonValue()),
        uuid: fc.oneof(fc.uuid(), fc.string()),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 2 },
  ),
)

void describe('upToPattern: the amounts 1..max as a regular expression', () => {
  for (const max of [1, 9, 10, 11, 99, 100, 305, 1000, 2_147_483_647]) {
    void it(`max ${max}`, () => {
      const re = new RegExp(`^(?:${upToPattern(max)})$`)
      const edges = [0, 1, 2, 9, 10, 11, max - 1, max, max + 1, max * 10, max + 10 ** 9]
      fc.assert(
        fc.property(fc.oneof(fc.constantFrom(...edges), fc.nat({ max: max * 2 + 10 })), (n) =>
          assert.equal(re.test(String(n)), n >= 1 && n <= max, String(n)),
        ),
        { numRuns: 500 },
      )
      for (const text of ['', '01', '-1', '1.0', ' 1']) assert.equal(re.test(text), false, text)
    })
  }
})

void describe('device-profile fuzzing', () => {
  void it('random bodies are a 201 with normalised string values, or a 400 naming a field', async () => {
    await fc.assert(
      fc.asyncProperty(bodyArb, async (body) => {
        const payload = JSON.stringify(body) ?? ''
        const res = await post(payload)
        assert.ok(
          res.statusCode === 201 || res.statusCode === 400,
          `${res.statusCode} ${res.body} for ${payload}`,
        )
        if (res.statusCode === 400) {
          assert.match(faultOf(res.body).faultstring, /^Invalid input for field '.+': \S/)
          return
        }
        const dp = res.json() as { name: string; groups: Record<string, unknown>[] }
        assert.equal(dp.name, (body as { name: string }[])[0]!.name)
        assert.ok(dp.groups.length > 0)
        for (const g of dp.groups) {
          for (const [key, value] of Object.entries(g)) {
            assert.equal(typeof value, 'string')
            if (key.startsWith('resources:')) assert.match(value as string, /^[1-9][0-9]*$/)
            if (key.startsWith('trait:')) assert.match(key, /^trait:CUSTOM_[A-Z0-9_]+$/)
          }
        }
      }),
      { numRuns: 1000 },
    )
  })
})
