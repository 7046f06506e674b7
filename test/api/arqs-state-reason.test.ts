/**
 * Microversion 2.10's `state_reason` on the v2 accelerator requests (docs/api-v2.md): a standalone
 * bind that finds nothing on the host is BindFailed, and from 2.10 the list, the single read and
 * the create show why (the reason its `accelerator.arq.bind_failed` event carries); below 2.10 the
 * ARQ object is as before, without the key.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const INSTANCE = '00000000-0000-4000-8000-0000000000a1'

interface ArqBody {
  uuid: string
  state: string
  state_reason?: string | null
}

void describe('v2 accelerator requests: state_reason from 2.10', () => {
  let s: Stack
  let failed: string
  let initial: ArqBody
  before(async () => {
    s = await startStack({ autoActivate: true })
    // node1 offers only the fake driver's FPGA: a PGPU request cannot fit there.
    const profile = [{ name: 'dp-nofit', groups: [{ 'resources:PGPU': '1' }] }]
    const made = await s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify(profile),
    })
    assert.equal(made.statusCode, 201, made.body)
    const create = () =>
      s.request({
        method: 'POST',
        url: '/v2/accelerator_requests',
        headers: json,
        payload: JSON.stringify({ device_profile_name: 'dp-nofit' }),
        version: '2.10',
      })
    const first = await create()
    assert.equal(first.statusCode, 201, first.body)
    failed = (first.json().arqs as ArqBody[])[0]!.uuid
    initial = ((await create()).json().arqs as ArqBody[])[0]!
    const ops = [
      { path: '/hostname', op: 'add', value: 'node1' },
      { path: '/instance_uuid', op: 'add', value: INSTANCE },
    ]
    const bind = await s.request({
      method: 'PATCH',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify({ [failed]: ops }),
    })
    assert.equal(bind.statusCode, 202, bind.body)
  })
  after(() => s.close())

  void it('a created request carries state_reason null at 2.10', () => {
    assert.equal(initial.state, 'Initial')
    assert.equal(initial.state_reason, null)
  })

  void it('the failed bind is BindFailed with its reason in the list and the single read', async () => {
    const list = await s.request({ url: '/v2/accelerator_requests', version: '2.10' })
    assert.equal(list.statusCode, 200, list.body)
    const arqs = list.json().arqs as ArqBody[]
    const bad = arqs.find((a) => a.uuid === failed)!
    assert.equal(bad.state, 'BindFailed')
    assert.match(
      bad.state_reason ?? '',
      /^no fit on node1: .*resource_class/,
      bad.state_reason ?? 'null',
    )
    const other = arqs.find((a) => a.uuid === initial.uuid)!
    assert.equal(other.state_reason, null)
    const one = await s.request({ url: `/v2/accelerator_requests/${failed}`, version: '2.10' })
    assert.equal(one.statusCode, 200, one.body)
    assert.deepEqual(one.json(), bad)
  })

  void it('below 2.10 the ARQ object has no state_reason', async () => {
    const list = await s.request({ url: '/v2/accelerator_requests', version: '2.9' })
    for (const arq of list.json().arqs as ArqBody[]) assert.equal('state_reason' in arq, false)
    const one = await s.request({ url: `/v2/accelerator_requests/${failed}` })
    assert.equal('state_reason' in one.json(), false)
    assert.equal(one.json().state, 'BindFailed')
  })
})
