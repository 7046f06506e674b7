/**
 * Every 4xx of the v2 accelerator requests: the status, and a message naming the field or problem;
 * and no 404 for a delete whose conductor call RabbitMQ delivered twice (docs/arqs.md, "Redelivered deletes").
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { createApp } from '../../src/api/app.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import { fault, HOST, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const INSTANCE = '00000000-0000-4000-8000-000000000001'
const UNKNOWN = '00000000-0000-4000-8000-0000000000ff'

void describe('v2 accelerator requests: errors', () => {
  let s: Stack
  let arq: string
  before(async () => {
    s = await startStack({ autoActivate: true, maxArqsPerRequest: 4 })
    for (const [name, amount] of [
      ['dp-err', '1'],
      ['dp-big', '5'],
    ]) {
      const body = [{ name, groups: [{ 'resources:FPGA': amount }] }]
      const res = await s.request({
        method: 'POST',
        url: '/v2/device_profiles',
        headers: json,
        payload: JSON.stringify(body),
      })
      assert.equal(res.statusCode, 201, res.body)
    }
    const res = await post({ device_profile_name: 'dp-err' })
    assert.equal(res.statusCode, 201, res.body)
    arq = (res.json().arqs as { uuid: string }[])[0]!.uuid
  })
  after(() => s.close())

  const post = (body: unknown) =>
    s.request({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify(body),
    })
  const patch = (body: unknown, url = '/v2/accelerator_requests', version?: string) =>
    s.request({
      method: 'PATCH',
      url,
      headers: json,
      payload: JSON.stringify(body),
      ...(version ? { version } : {}),
    })
  const expect = (
    res: { statusCode: number; body: string },
    status: number,
    re: RegExp,
    what: string,
  ) => {
    assert.equal(res.statusCode, status, `${what}: ${res.body}`)
    assert.match(fault(res as never), re, what)
  }
  const bind = [
    { path: '/hostname', op: 'add', value: 'node1' },
    { path: '/instance_uuid', op: 'add', value: INSTANCE },
  ]

  void it('POST: unknown profile 404; bad bodies and too many ARQs 400', async () => {
    expect(await post({ device_profile_name: 'nope' }), 404, /nope/, 'unknown profile')
    expect(await post({}), 400, /'device_profile_name'/, 'missing name')
    // OpenStack Cyborg looks the empty name up too: 404 "Device Profile not found" (issue 27).
    expect(await post({ device_profile_name: '' }), 404, /Device Profile not found/, 'empty name')
    expect(await post({ device_profile_name: 3 }), 400, /'device_profile_name'/, 'number')
    expect(await post({ device_profile_name: 'dp-err', extra: 1 }), 400, /'extra'/, 'unknown field')
    expect(
      await post({ device_profile_name: 'dp-err', device_profile_group_id: 'x' }),
      400,
      /'device_profile_group_id'/,
      'group id',
    )
    expect(await post([{ device_profile_name: 'dp-err' }]), 400, /'body'/, 'a list')
    expect(
      await post({ device_profile_name: 'dp-big' }),
      400,
      /resources:FPGA.*more than 4/,
      'over max_arqs_per_request',
    )
    const none = await s.request({ method: 'POST', url: '/v2/accelerator_requests' })
    expect(none, 400, /'body'/, 'no body')
  })

  void it('GET: bad bind_state, instance, limit or marker 400; unknown or malformed uuid 404', async () => {
    const get = (url: string) => s.request({ url })
    expect(
      await get('/v2/accelerator_requests?bind_state=bound'),
      400,
      /'bind_state'.*bound/,
      'bind_state',
    )
    expect(await get('/v2/accelerator_requests?instance=vm1'), 400, /'instance'.*vm1/, 'instance')
    expect(await get('/v2/accelerator_requests?limit=0'), 400, /'limit'/, 'limit')
    expect(await get(`/v2/accelerator_requests?marker=${UNKNOWN}`), 400, /'marker'/, 'marker')
    expect(
      await get(`/v2/accelerator_requests/${UNKNOWN}`),
      404,
      new RegExp(UNKNOWN),
      'unknown uuid',
    )
    expect(await get('/v2/accelerator_requests/not-a-uuid'), 404, /not-a-uuid/, 'malformed uuid')
    const put = await s.request({ method: 'PUT', url: '/v2/accelerator_requests' })
    expect(put, 405, /PUT/, 'other method')
  })

  void it('PATCH: every malformed patch is 400 naming the field; /project_id below 2.1 is 406', async () => {
    const cases: [unknown, RegExp, string][] = [
      [{}, /'body'/, 'empty object'],
      [[], /'body'/, 'a list'],
      [{ [arq]: [] }, new RegExp(`'${arq}'`), 'empty op list'],
      [{ 'not-a-uuid': bind }, /'not-a-uuid'.*UUID/, 'key not a uuid'],
      [
        { [arq]: [...bind, { path: '/hostname', op: 'remove' }] },
        /mixes add and remove/,
        'mixed ops',
      ],
      [
        { [arq]: [{ path: '/foo', op: 'add', value: 'x' }] },
        /'.*\/0\/path'.*"\/foo"/,
        'unknown path',
      ],
      [
        { [arq]: [{ path: '/hostname', op: 'replace', value: 'x' }] },
        /\/0\/op'.*add, remove/,
        'op replace',
      ],
      [
        { [arq]: [{ path: '/hostname', op: 'add', value: 'x', extra: 1 }] },
        /\/0\/extra'/,
        'unknown op field',
      ],
      [
        { [arq]: [{ path: '/hostname', op: 'add', value: 1 }] },
        /\/0\/value'/,
        'value not a string',
      ],
      [{ [arq]: [bind[0]] }, /missing \/instance_uuid/, 'instance absent'],
      [{ [arq]: [bind[1]] }, /missing \/hostname/, 'hostname absent'],
      [
        { [arq]: [bind[0], { path: '/instance_uuid', op: 'add', value: 'vm1' }] },
        /\/1\/value'.*UUID/,
        'instance not a uuid',
      ],
      [{ [arq]: [bind[0], bind[1], bind[1]] }, /\/2\/path'.*twice/, 'path twice'],
      [{ [arq]: [{ path: '/hostname', op: 'add' }, bind[1]] }, /\/0\/value'/, 'add without value'],
    ]
    for (const [body, re, what] of cases) expect(await patch(body), 400, re, what)
    const removeOps = [{ path: '/hostname', op: 'remove' }]
    expect(
      await patch({ [arq]: bind, [UNKNOWN]: removeOps }),
      400,
      /'body'.*two requests/,
      'bind and unbind at once',
    )
    expect(await patch({ [UNKNOWN]: bind }), 404, new RegExp(UNKNOWN), 'unknown ARQ')
    const project = [...bind, { path: '/project_id', op: 'add', value: 'p1' }]
    expect(await patch({ [arq]: project }), 406, /\/project_id.*2\.1/, 'project_id at 2.0')
    assert.equal(
      (await s.request({ url: `/v2/accelerator_requests/${arq}` })).json().state,
      'Initial',
      'nothing changed',
    )
  })

  void it('PATCH /{uuid}: the body must be about the path uuid alone', async () => {
    const url = `/v2/accelerator_requests/${arq}`
    expect(await patch({ [UNKNOWN]: bind }, url), 400, /'body'.*uuid of the path/, 'other key')
    expect(await patch({ [arq]: bind, [UNKNOWN]: bind }, url), 400, /'body'/, 'two keys')
    expect(
      await patch({ [UNKNOWN]: bind }, `/v2/accelerator_requests/${UNKNOWN}`),
      404,
      new RegExp(UNKNOWN),
      'unknown',
    )
  })

  void it('DELETE: both or neither of instance and arqs, empty or malformed lists 400; unknown uuid 404', async () => {
    const del = (url: string) => s.request({ method: 'DELETE', url })
    expect(await del('/v2/accelerator_requests'), 400, /'instance' and 'arqs'/, 'neither')
    expect(
      await del(`/v2/accelerator_requests?instance=${INSTANCE}&arqs=${arq}`),
      400,
      /'instance' and 'arqs'/,
      'both',
    )
    expect(await del('/v2/accelerator_requests?arqs='), 400, /'arqs'/, 'empty arqs')
    expect(await del('/v2/accelerator_requests?arqs=x1'), 400, /'arqs'.*x1/, 'malformed arqs')
    expect(
      await del('/v2/accelerator_requests?instance=vm1'),
      400,
      /'instance'/,
      'malformed instance',
    )
    expect(
      await del(`/v2/accelerator_requests/${UNKNOWN}`),
      404,
      new RegExp(UNKNOWN),
      'unknown uuid',
    )
    expect(await del('/v2/accelerator_requests/zzz'), 404, /zzz/, 'malformed uuid')
    assert.equal(
      (await s.request({ url: `/v2/accelerator_requests/${arq}` })).statusCode,
      200,
      'nothing deleted',
    )
  })

  void it('DELETE by uuid whose conductor call is delivered twice answers 204; an unknown uuid among them 404s', async () => {
    // What RabbitMQ does when a conductor dies after the delete committed and before its ack:
    // the same message runs again and the caller gets the second run's answer.
    const twice: ConductorRpc = new Proxy(s.core.conductorClient, {
      get: (target, method: keyof ConductorRpc) =>
        method !== 'deleteArqs'
          ? target[method]
          : async (req: Parameters<ConductorRpc['deleteArqs']>[0]) => {
              await target.deleteArqs(req).catch(() => null)
              return target.deleteArqs(req)
            },
    })
    const app = await createApp({ db: s.db.db, conductor: twice, log: pino({ level: 'silent' }) })
    try {
      const del = (url: string) => app.inject({ method: 'DELETE', url, headers: { host: HOST } })
      const one = (await post({ device_profile_name: 'dp-err' })).json<{
        arqs: { uuid: string }[]
      }>()
      const gone = await del(`/v2/accelerator_requests/${one.arqs[0]!.uuid}`)
      assert.equal(gone.statusCode, 204, gone.body)
      const two = (await post({ device_profile_name: 'dp-err' })).json<{
        arqs: { uuid: string }[]
      }>()
      const known = two.arqs[0]!.uuid
      const mixed = await del(`/v2/accelerator_requests?arqs=${known},${UNKNOWN}`)
      expect(mixed, 404, new RegExp(UNKNOWN), 'unknown')
      assert.ok(!fault(mixed).includes(known), `only the unknown one named: ${mixed.body}`)
      assert.equal(
        (await s.request({ url: `/v2/accelerator_requests/${known}` })).statusCode,
        404,
        'the known one deleted',
      )
    } finally {
      await app.close()
    }
  })
})
