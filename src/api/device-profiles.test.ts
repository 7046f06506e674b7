import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { parseDeviceProfileCreate } from '../domain/device-profile.js'
import { InvalidInputError } from '../domain/errors.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { createTestApp, type TestApp } from '../../test/support/api-app.js'

const dp = (fields: Record<string, unknown>) => [
  { name: 'dp1', groups: [{ 'resources:FPGA': '1' }], ...fields },
]
const group = (g: Record<string, unknown>) => dp({ groups: [g] })

void describe('parseDeviceProfileCreate: accepted', () => {
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
      },
    ],
    [
      'integer values become strings',
      group({ 'resources:GPU': 2, 'resources:CUSTOM_ACCEL_X': 1.0 }),
      {
        name: 'dp1',
        description: null,
        groups: [{ 'resources:GPU': '2', 'resources:CUSTOM_ACCEL_X': '1' }],
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
    void it(name, () => assert.deepEqual(parseDeviceProfileCreate(body), expected))
  }
})

void describe('parseDeviceProfileCreate: rejected with the field named', () => {
  const cases: [string, unknown, string][] = [
    ['an object instead of a list', { name: 'a', groups: [] }, 'body'],
    ['an empty list', [], 'body'],
    ['two profiles', [dp({})[0], dp({ name: 'b' })[0]], 'body'],
    ['a list of a string', ['x'], 'body[0]'],
    ['a missing name', [{ groups: [{ 'resources:FPGA': '1' }] }], 'name'],
    ['an empty name', dp({ name: '' }), 'name'],
    ['a long name', dp({ name: 'a'.repeat(256) }), 'name'],
    ['a name with a space', dp({ name: 'a b' }), 'name'],
    ['a numeric name', dp({ name: 5 }), 'name'],
    ['missing groups', [{ name: 'a' }], 'groups'],
    ['groups not a list', dp({ groups: {} }), 'groups'],
    ['no groups', dp({ groups: [] }), 'groups'],
    ['a group that is a list', dp({ groups: [[]] }), 'groups[0]'],
    ['an empty group', dp({ groups: [{ 'resources:FPGA': '1' }, {}] }), 'groups[1]'],
    ['an unknown prefix', group({ 'foo:bar': 'x' }), 'groups[0]["foo:bar"]'],
    [
      'a standard trait',
      group({ 'trait:HW_CPU_X86_AVX': 'required' }),
      'groups[0]["trait:HW_CPU_X86_AVX"]',
    ],
    [
      'a lower-case custom trait',
      group({ 'trait:CUSTOM_a': 'required' }),
      'groups[0]["trait:CUSTOM_a"]',
    ],
    ['a trait value', group({ 'trait:CUSTOM_A': 'maybe' }), 'groups[0]["trait:CUSTOM_A"]'],
    ['an unknown RC', group({ 'resources:TPU': '1' }), 'groups[0]["resources:TPU"]'],
    ['amount 0', group({ 'resources:FPGA': '0' }), 'groups[0]["resources:FPGA"]'],
    ['a negative amount', group({ 'resources:FPGA': -1 }), 'groups[0]["resources:FPGA"]'],
    ['a fractional amount', group({ 'resources:FPGA': 1.5 }), 'groups[0]["resources:FPGA"]'],
    ['a non-numeric amount', group({ 'resources:FPGA': 'one' }), 'groups[0]["resources:FPGA"]'],
    ['a huge amount', group({ 'resources:FPGA': '99999999999' }), 'groups[0]["resources:FPGA"]'],
    ['a null value', group({ 'resources:FPGA': null }), 'groups[0]["resources:FPGA"]'],
    ['a boolean value', group({ 'accel:bitstream_id': true }), 'groups[0]["accel:bitstream_id"]'],
    ['an unknown accel key', group({ 'accel:colour': 'red' }), 'groups[0]["accel:colour"]'],
    ['an empty accel value', group({ 'accel:function_id': '' }), 'groups[0]["accel:function_id"]'],
    [
      'duplicate trait keys after trimming',
      group({ 'trait:CUSTOM_A': 'required', 'trait: CUSTOM_A': 'forbidden' }),
      'groups[0]["trait: CUSTOM_A"]',
    ],
    ['a bad uuid', dp({ uuid: 'nope' }), 'uuid'],
    ['a numeric description', dp({ description: 1 }), 'description'],
    ['a long description', dp({ description: 'd'.repeat(256) }), 'description'],
    ['an unknown field', dp({ created_at: 'now' }), 'created_at'],
  ]
  for (const [name, body, field] of cases) {
    void it(name, () => {
      assert.throws(
        () => parseDeviceProfileCreate(body),
        (err: unknown) => {
          assert.ok(err instanceof InvalidInputError, String(err))
          assert.equal(err.details?.field, field)
          assert.ok(err.message.startsWith(`Invalid input for field '${field}': `), err.message)
          return true
        },
      )
    })
  }
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

void describe('device-profile fuzzing', () => {
  void it('parseDeviceProfileCreate returns a valid profile or throws InvalidInputError, nothing else', () => {
    fc.assert(
      fc.property(bodyArb, (body) => {
        try {
          const p = parseDeviceProfileCreate(body)
          assert.ok(p.groups.length > 0)
          for (const g of p.groups)
            for (const v of Object.values(g)) assert.equal(typeof v, 'string')
        } catch (err) {
          if (!(err instanceof InvalidInputError)) throw err
        }
      }),
      { numRuns: 2000 },
    )
  })

  let t: TestApp
  before(async () => {
    // Echoes the profile back, so valid bodies are 201; the conductor's own rules are tested in test/api.
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

  void it('random JSON bodies never produce a 500', async () => {
    await fc.assert(
      fc.asyncProperty(bodyArb, async (body) => {
        const payload = JSON.stringify(body) ?? ''
        const res = await t.app.inject({
          method: 'POST',
          url: '/v2/device_profiles',
          headers: { 'content-type': 'application/json' },
          payload,
        })
        assert.ok(
          res.statusCode === 201 || res.statusCode === 400,
          `${res.statusCode} ${res.body} for ${payload}`,
        )
        if (res.statusCode === 201)
          assert.equal(res.json().name, (body as { name: string }[])[0]!.name)
      }),
      { numRuns: 300 },
    )
  })
})
