/**
 * `POST /v2/devices/{uuid}/configure` (2.8) over a recording conductor: exactly one of
 * `sriov_numvfs` and `vgpu_type`, each malformed body a 400 naming the field, the caller passed
 * on, the microversion gate, the layouts in the answer, and the conductor's errors mapped (404,
 * 409 naming the holder, 400 naming the field, 502 when the host refused part-way, 503); then
 * `cyborg device configure` against it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  ConflictError,
  DriverError,
  InvalidInputError,
  NotFoundError,
  UnavailableError,
} from '../../src/domain/errors.js'
import type { ConductorRpc, ConfigureOutcome } from '../../src/rpc/conductor-rpc.js'
import { createTestApp, faultOf, throwingConductor, type TestApp } from '../support/api-app.js'
import { cyborg } from '../support/cli.js'

const DEVICE = '6c1b0000-0000-4000-8000-0000000000d1'
type ConfigureRequest = Parameters<ConductorRpc['configureDevice']>[0]

const FAILURES: Record<string, Error> = {
  '6c1b0000-0000-4000-8000-000000000404': new NotFoundError('device not found'),
  '6c1b0000-0000-4000-8000-000000000409': new ConflictError(
    'cannot configure device x while its units are in use: accelerator request y',
    { code: 'RECONFIG_UNITS_HELD' },
  ),
  '6c1b0000-0000-4000-8000-000000000400': new InvalidInputError(
    'sriov_numvfs 17 is more than the 16 VFs the PF supports',
    { code: 'SRIOV_NUMVFS_OUT_OF_RANGE', details: { field: 'sriov_numvfs' } },
  ),
  '6c1b0000-0000-4000-8000-000000000502': new DriverError('writing sriov_numvfs failed', {
    code: 'CONFIGURE_FAILED',
  }),
  '6c1b0000-0000-4000-8000-000000000503': new UnavailableError('the agent did not answer', {
    code: 'CONFIGURE_UNCONFIRMED',
  }),
}

void describe('POST /v2/devices/{uuid}/configure, over a recording conductor', () => {
  let t: TestApp
  const asked: ConfigureRequest[] = []
  const conductor = new Proxy(throwingConductor(), {
    get: (target, method, receiver) =>
      method === 'configureDevice'
        ? async (req: ConfigureRequest): Promise<ConfigureOutcome> => {
            asked.push(req)
            const failure = FAILURES[req.uuid]
            if (failure) throw failure
            return {
              device: req.uuid,
              operation: '6c1b0000-0000-4000-8000-0000000000aa',
              changed: true,
              previous: { sriovNumvfs: 4 },
              applied: { sriovNumvfs: req.change.sriovNumvfs ?? 0 },
            }
          }
        : (Reflect.get(target, method, receiver) as unknown),
  })
  before(async () => {
    t = await createTestApp({}, conductor)
  })
  after(() => t.close())

  const post = (uuid: string, payload: unknown, version = '2.8') =>
    t.app.inject({
      method: 'POST',
      url: `/v2/devices/${uuid}/configure`,
      headers: {
        'content-type': 'application/json',
        'openstack-api-version': `accelerator ${version}`,
      },
      payload: JSON.stringify(payload),
    })

  void it('passes the change on and answers the layouts before and after', async () => {
    const res = await post(DEVICE, { sriov_numvfs: 8 })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), {
      device: DEVICE,
      operation: '6c1b0000-0000-4000-8000-0000000000aa',
      changed: true,
      previous: { sriov_numvfs: 4 },
      applied: { sriov_numvfs: 8 },
    })
    assert.deepEqual(asked.at(-1)!.change, { sriovNumvfs: 8 })
    await post(DEVICE, { vgpu_type: 'nvidia-319' })
    assert.deepEqual(asked.at(-1)!.change, { vgpuType: 'nvidia-319' })
  })

  void it('answers a malformed body with a 400 naming the field, without asking', async () => {
    const before = asked.length
    const cases: [unknown, RegExp][] = [
      [{}, /exactly one of sriov_numvfs and vgpu_type/],
      [{ sriov_numvfs: 2, vgpu_type: 'nvidia-1' }, /exactly one of sriov_numvfs and vgpu_type/],
      [{ sriov_numvfs: -1 }, /sriov_numvfs/],
      [{ sriov_numvfs: 'eight' }, /sriov_numvfs/],
      [{ vgpu_type: '' }, /vgpu_type/],
      [{ vgpus: 2 }, /vgpus/],
    ]
    for (const [payload, message] of cases) {
      const res = await post(DEVICE, payload)
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`)
      assert.match(faultOf(res.body).faultstring, message, JSON.stringify(payload))
    }
    assert.equal(asked.length, before)
  })

  void it('is not there below 2.8', async () => {
    const res = await post(DEVICE, { sriov_numvfs: 8 }, '2.7')
    assert.equal(res.statusCode, 404)
    assert.match(faultOf(res.body).faultstring, /2\.8/)
  })

  void it('maps what the conductor says: 404, 409, 400, 502, 503', async () => {
    for (const [uuid, err] of Object.entries(FAILURES)) {
      const res = await post(uuid, { sriov_numvfs: 17 })
      assert.equal(res.statusCode, Number(uuid.slice(-3)), res.body)
      // A refusal naming its field is worded as every 400: Invalid input for field '…' (issue 27).
      const field = (err as InvalidInputError).details?.field as string | undefined
      assert.equal(
        faultOf(res.body).faultstring,
        field === undefined
          ? err.message
          : `Invalid input for field '${field}': ${err.message.slice(field.length + 1)}`,
      )
    }
  })

  void it('cyborg device configure prints the change, or the JSON; refuses both or neither flag', async () => {
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 })
    const env = { CYBORG_URL: url, OS_TOKEN: 'admin' }
    const plain = await cyborg(['device', 'configure', DEVICE, '--sriov-numvfs', '8'], env)
    assert.equal(plain.code, 0, plain.stderr)
    assert.equal(
      plain.stdout,
      `device ${DEVICE}: 4 VFs → 8 VFs (operation 6c1b0000-0000-4000-8000-0000000000aa)\n`,
    )
    const json = await cyborg(
      ['device', 'configure', DEVICE, '--sriov-numvfs', '2', '--format', 'json'],
      env,
    )
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual((JSON.parse(json.stdout) as { applied: unknown }).applied, { sriov_numvfs: 2 })
    const neither = await cyborg(['device', 'configure', DEVICE], env)
    assert.equal(neither.code, 1)
    assert.match(neither.stderr, /exactly one of --sriov-numvfs and --vgpu-type/)
    const held = await cyborg(
      ['device', 'configure', '6c1b0000-0000-4000-8000-000000000409', '--vgpu-type', 'nvidia-1'],
      env,
    )
    assert.equal(held.code, 1)
    assert.match(held.stderr, /HTTP 409: cannot configure device x while its units are in use/)
  })
})
