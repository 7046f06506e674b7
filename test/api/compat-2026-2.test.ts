/**
 * OpenStack Cyborg 2026.2 (17.0.0) on the wire, pinned over HTTP against the in-process stack
 * (docs/compat-2026-2.md):
 * - `error_message` is an object `{faultcode, faultstring, debuginfo}` (fix-double-encoded-error-
 *   responses), at every microversion and on v1 too; python-cyborgclient's own HTTP client, which
 *   `json.loads` it, still gets the ≤ 16.x JSON text;
 * - a device profile group without a `resources:` key is a 400 naming the group (bug 2168261);
 * - `OpenStack-API-Version: accelerator X.Y` and the bare `X.Y` both select the microversion; no
 *   legacy header is read (the bare form's deprecation warning: src/api/microversion.test.ts);
 * - devices show `device_state` from 2.9, mapped from the units' cleaning and allocation.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { HOST, startStack, type Stack } from './stack.js'

const CYBORGCLIENT = 'python-cyborgclient keystoneauth1/5.0.0 python-requests/2.28.1 CPython/3.11.2'
const SDK = 'openstacksdk/0.101.0 keystoneauth1/5.0.0 python-requests/2.28.1 CPython/3.11.2'
const MISSING = '00000000-0000-4000-8000-000000000000'

interface UnitRow {
  in_use?: number
  clean_state?: string | null
  clean_since?: string | null
  clean_attempt_at?: string | null
}

void describe('OpenStack Cyborg 17.0.0 wire changes', () => {
  let s: Stack
  before(async () => {
    s = await startStack()
  })
  after(() => s.close())

  /** The fault of an error body whose `error_message` has exactly `shape`. */
  const faultIn = (res: LightMyRequestResponse, shape: 'object' | 'string') => {
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const body = res.json() as { error_message: unknown }
    assert.deepEqual(Object.keys(body), ['error_message'])
    assert.equal(typeof body.error_message, shape, res.body)
    const inner = body.error_message
    return (typeof inner === 'string' ? JSON.parse(inner) : inner) as Record<string, unknown>
  }

  const errors = (agent?: string) => {
    const headers = agent === undefined ? {} : { 'user-agent': agent }
    return Promise.all([
      s.request({ url: `/v2/devices/${MISSING}`, headers }),
      s.request({ url: `/devices/${MISSING}`, version: '2.3', headers }),
      s.request({ url: '/v2/nothing-here', headers }),
      s.request({ url: '/v2/devices', version: '2.99', headers }),
      s.request({ url: '/v2/devices?limit=x', headers }),
      s.request({ url: `/v1/accelerators/${MISSING}`, headers }),
    ])
  }

  void it('error_message is an object {faultcode, faultstring, debuginfo} at every microversion', async () => {
    for (const agent of [undefined, SDK, 'curl/8.5.0']) {
      const answers = await errors(agent)
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        [404, 404, 404, 406, 400, 404],
      )
      for (const res of answers) {
        const fault = faultIn(res, 'object')
        assert.deepEqual(Object.keys(fault).sort(), ['debuginfo', 'faultcode', 'faultstring'])
        assert.equal(fault.faultcode, 'Client')
        assert.equal(fault.debuginfo, null)
        assert.equal(typeof fault.faultstring, 'string')
      }
      assert.match(String(faultIn(answers[3]!, 'object').faultstring), /2\.0 to 2\.10/)
      assert.match(String(faultIn(answers[4]!, 'object').faultstring), /'limit'/)
    }
  })

  void it("python-cyborgclient's own HTTP client still gets the JSON text it json.loads", async () => {
    const plain = await errors()
    const legacy = await errors(CYBORGCLIENT)
    assert.deepEqual(
      legacy.map((r) => r.statusCode),
      plain.map((r) => r.statusCode),
    )
    legacy.forEach((res, i) => {
      assert.deepEqual(faultIn(res, 'string'), faultIn(plain[i]!, 'object'))
    })
  })

  const createProfile = (name: string, groups: unknown[]) =>
    s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify([{ name, groups }]),
    })
  const profileNames = async () =>
    (
      (await s.request({ url: '/v2/device_profiles' })).json().device_profiles as { name: string }[]
    ).map((p) => p.name)

  void it('a device profile group without a resources: key is a 400 naming it; nothing is stored', async () => {
    const cases: [unknown[], string][] = [
      [[{ 'trait:CUSTOM_FAKE_DEVICE': 'required' }], 'groups[0]'],
      [[{ 'accel:bitstream_id': 'b1' }], 'groups[0]'],
      [[{ 'resources:FPGA': '1' }, { 'trait:CUSTOM_FAKE_DEVICE': 'forbidden' }], 'groups[1]'],
    ]
    for (const [groups, field] of cases) {
      const res = await createProfile('no-resources', groups)
      assert.equal(res.statusCode, 400, res.body)
      const { faultstring } = faultIn(res, 'object')
      assert.match(
        String(faultstring),
        new RegExp(`^Invalid input for field '${field.replace(/[[\]]/g, '\\$&')}': `),
      )
      assert.match(String(faultstring), /resources:/)
    }
    assert.deepEqual(await profileNames(), [])
    const ok = await createProfile('with-resources', [
      { 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required', 'accel:bitstream_id': 'b1' },
    ])
    assert.equal(ok.statusCode, 201, ok.body)
    assert.deepEqual(await profileNames(), ['with-resources'])
  })

  void it('the microversion comes from "accelerator X.Y" or a bare "X.Y"; no legacy header', async () => {
    const device = async (headers: Record<string, string>) => {
      const res = await s.request({ url: '/v2/devices', headers })
      assert.equal(res.statusCode, 200, res.body)
      return { version: res.headers['openstack-api-version'], first: res.json().devices[0] }
    }
    for (const value of [
      'accelerator 2.3',
      '2.3',
      'Accelerator 2.3',
      'compute 2.90, accelerator 2.3',
    ]) {
      const { version, first } = await device({ 'openstack-api-version': value })
      assert.equal(version, 'accelerator 2.3', value)
      assert.equal(first.status, 'enabled', value)
    }
    for (const legacy of [
      'x-openstack-cyborg-api-version',
      'x-openstack-accelerator-api-version',
    ]) {
      const { version, first } = await device({ [legacy]: '2.3' })
      assert.equal(version, 'accelerator 2.0', legacy)
      assert.equal('status' in first, false, legacy)
    }
  })
})

void describe('device_state (microversion 2.9)', () => {
  let s: Stack
  before(async () => {
    // No cleaning sweep: the units this test marks as released stay as marked (nobody asks a clean).
    s = await startStack({ conductor: { cleaning: { sweepIntervalMs: 0 } } })
  })
  after(() => s.close())

  const devices = async (version: string) => {
    const res = await s.request({ url: '/v2/devices?hostname=node2', version })
    assert.equal(res.statusCode, 200, res.body)
    return res.json().devices as { uuid: string; device_state?: string }[]
  }
  const stateOf = async (uuid: string) => {
    const res = await s.request({ url: `/v2/devices/${uuid}`, version: '2.9' })
    assert.equal(res.statusCode, 200, res.body)
    return (res.json() as { device_state: string }).device_state
  }
  /** Sets the first attach handle of `uuid`'s device as given (the writes a bind, release, clean make). */
  const setUnit = async (uuid: string, row: UnitRow) => {
    const db = s.db.db
    const device = await db
      .selectFrom('devices')
      .select('id')
      .where('uuid', '=', uuid)
      .executeTakeFirstOrThrow()
    const handle = await db
      .selectFrom('attach_handles as h')
      .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
      .select('h.id')
      .where('d.device_id', '=', device.id)
      .orderBy('h.id')
      .executeTakeFirstOrThrow()
    await db.updateTable('attach_handles').set(row).where('id', '=', handle.id).execute()
  }

  void it('is shown from 2.9 only', async () => {
    for (const v of ['2.0', '2.5', '2.8'])
      assert.ok(
        (await devices(v)).every((d) => !('device_state' in d)),
        v,
      )
    const at29 = await devices('2.9')
    assert.equal(at29.length, 4)
    assert.ok(at29.every((d) => d.device_state === 'available'))
    const one = await s.request({
      url: `/v2/devices/${at29[0]!.uuid}`,
      headers: { host: HOST, 'openstack-api-version': 'accelerator latest' },
    })
    assert.equal(one.json().device_state, 'available')
  })

  void it('maps held, cleaning and failed units, and a failed device, to 17.0.0 states', async () => {
    const [a, b, c, d] = (await devices('2.9')).map((x) => x.uuid)
    const now = '2026-11-28T19:00:00.000000+00:00'
    await setUnit(a!, { in_use: 1 })
    await setUnit(b!, {
      in_use: 1,
      clean_state: 'pending',
      clean_since: now,
      clean_attempt_at: null,
    })
    await setUnit(c!, {
      in_use: 1,
      clean_state: 'pending',
      clean_since: now,
      clean_attempt_at: now,
    })
    await setUnit(d!, { in_use: 1, clean_state: 'failed', clean_since: now, clean_attempt_at: now })
    assert.deepEqual(await Promise.all([a, b, c, d].map((u) => stateOf(u!))), [
      'allocated',
      'pending_cleaning',
      'cleaning',
      'error',
    ])
    const listed = new Map((await devices('2.9')).map((x) => [x.uuid, x.device_state]))
    assert.deepEqual(
      [a, b, c, d].map((u) => listed.get(u!)),
      ['allocated', 'pending_cleaning', 'cleaning', 'error'],
    )

    await setUnit(a!, { in_use: 0 })
    assert.equal(await stateOf(a!), 'available')
    await s.db.db
      .updateTable('devices')
      .set({ health: 'failed', health_reason: 'test' })
      .where('uuid', '=', a!)
      .execute()
    assert.equal(await stateOf(a!), 'error')
  })
})
