/**
 * `PATCH /v2/deployables/{uuid}/program` over a recording conductor: OpenStack Cyborg's one-op
 * JSON-patch body, each malformed body a 400 naming the field, the caller passed on, and the
 * conductor's errors mapped (404, 409 naming the holder, 400 for a refused image, 502 when the
 * card's tool failed, 503 when the agent did not answer).
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
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import { createTestApp, faultOf, throwingConductor, type TestApp } from '../support/api-app.js'
import { cyborg } from '../support/cli.js'
import { startStack, type Stack } from './stack.js'

const IMAGE = '5e1b0000-0000-4000-8000-000000000001'
const DEP = '5e1b0000-0000-4000-8000-0000000000d1'
type ProgramRequest = Parameters<ConductorRpc['programDeployable']>[0]

const FAILURES: Record<string, Error> = {
  '5e1b0000-0000-4000-8000-000000000404': new NotFoundError('deployable not found'),
  '5e1b0000-0000-4000-8000-000000000409': new ConflictError(
    'cannot program deployable x while its units are in use: accelerator request y',
    { code: 'RECONFIG_UNITS_HELD' },
  ),
  '5e1b0000-0000-4000-8000-000000000400': new InvalidInputError('image z failed verification', {
    code: 'IMAGE_HASH_MISMATCH',
  }),
  '5e1b0000-0000-4000-8000-000000000502': new DriverError('fake: programming failed part-way', {
    code: 'PROGRAM_FAILED',
  }),
  '5e1b0000-0000-4000-8000-000000000503': new UnavailableError('the agent did not answer', {
    code: 'PROGRAM_UNCONFIRMED',
  }),
}

void describe('PATCH /v2/deployables/{uuid}/program, over a recording conductor', () => {
  let t: TestApp
  const asked: ProgramRequest[] = []
  const conductor = new Proxy(throwingConductor(), {
    get: (target, method, receiver) =>
      method === 'programDeployable'
        ? async (req: ProgramRequest) => {
            asked.push(req)
            const failure = FAILURES[req.uuid]
            if (failure) throw failure
            throw new NotFoundError(`deployable ${req.uuid} not found`)
          }
        : (Reflect.get(target, method, receiver) as unknown),
  })
  before(async () => {
    t = await createTestApp({}, conductor)
  })
  after(() => t.close())

  const patch = (uuid: string, payload: unknown) =>
    t.app.inject({
      method: 'PATCH',
      url: `/v2/deployables/${uuid}/program`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(payload),
    })
  const body = (image: unknown = IMAGE) => [
    { path: '/program', op: 'replace', value: [{ image_uuid: image }] },
  ]

  void it('passes the image and the caller on, as the openstack CLI sends it', async () => {
    const res = await patch(DEP, body())
    assert.equal(res.statusCode, 404)
    assert.equal(asked.at(-1)!.uuid, DEP)
    assert.equal(asked.at(-1)!.imageUuid, IMAGE)
  })

  void it('answers a malformed body with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ path: '/program' }, /must be array|expected an array|body/i],
      [[], /fewer than 1|at least 1|must NOT have fewer/i],
      [
        [{ path: '/name', op: 'replace', value: [{ image_uuid: IMAGE }] }],
        /0\/path.*must be \/program/,
      ],
      [[{ path: '/program', op: 'add', value: [{ image_uuid: IMAGE }] }], /0\/op.*must be replace/],
      [body('not-a-uuid'), /image_uuid.*must be a Glance image uuid/],
      [[{ path: '/program', op: 'replace', value: [] }], /value/],
      [[{ path: '/program', op: 'replace', value: [{ image: IMAGE }] }], /image/],
    ]
    const before = asked.length
    for (const [payload, message] of cases) {
      const res = await patch(DEP, payload)
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`)
      assert.match(faultOf(res.body).faultstring, message, JSON.stringify(payload))
    }
    assert.equal(asked.length, before, 'nothing reached the conductor')
  })

  void it('maps what the conductor says: 404, 409, 400, 502, 503', async () => {
    for (const [uuid, err] of Object.entries(FAILURES)) {
      const res = await patch(uuid, body())
      assert.equal(res.statusCode, Number(uuid.slice(-3)), res.body)
      assert.equal(faultOf(res.body).faultstring, err.message)
    }
  })

  void it('answers 404 for a malformed deployable uuid without asking the conductor', async () => {
    const before = asked.length
    assert.equal((await patch('nope', body())).statusCode, 404)
    assert.equal(asked.length, before)
  })

  void it('cyborg deployable program sends the program body and prints a refusal', async () => {
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 })
    const held = '5e1b0000-0000-4000-8000-000000000409'
    const r = await cyborg(['deployable', 'program', held, IMAGE], {
      CYBORG_URL: url,
      OS_TOKEN: 'admin',
    })
    assert.equal(r.code, 1)
    assert.match(r.stderr, /HTTP 409: cannot program deployable x while its units are in use/)
    assert.deepEqual(asked.at(-1), {
      uuid: held,
      imageUuid: IMAGE,
      userId: asked.at(-1)!.userId,
      projectId: asked.at(-1)!.projectId,
    })
  })
})

void describe('PATCH /v2/deployables/{uuid}/program on an agent without an image store', () => {
  let s: Stack
  before(async () => {
    s = await startStack({ autoActivate: true })
  })
  after(() => s.close())

  void it('is a 409 naming [glance] endpoint_override: no retry changes a configuration (issue 27)', async () => {
    const deps = await s.request({ url: '/v2/deployables' })
    const dep = (deps.json().deployables as { uuid: string }[])[0]!.uuid
    const res = await s.request({
      method: 'PATCH',
      url: `/v2/deployables/${dep}/program`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify([
        { path: '/program', op: 'replace', value: [{ image_uuid: IMAGE }] },
      ]),
    })
    assert.equal(res.statusCode, 409, res.body)
    assert.match(faultOf(res.body).faultstring, /\[glance\] endpoint_override/)
    // Nothing was taken out of service for it: the deployable can be programmed once configured.
    const after = await s.request({ url: `/v2/deployables/${dep}` })
    assert.equal(after.statusCode, 200)
  })
})
