/**
 * Every OpenStack call ends within its bounds against a server that answers a status line and then
 * misbehaves (test/support/fuzz/hostile-server.ts): an endless body stops at the answer limit, a stalled
 * or trickling one at the call's time limit, with an UnavailableError that says which, and the
 * connection is closed (the server sees it go, having sent a bounded number of bytes).
 * Requests through requestJson (Placement, Nova, Glance's metadata, Barbican's metadata, Keystone
 * validation, unified limits), Keystone password auth, Barbican's payload and Glance's download.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { hostileServer, type Misbehaviour } from '../../test/support/fuzz/hostile-server.js'
import { UnavailableError } from '../domain/errors.js'
import { OPENSTACK_ANSWER_LIMIT_BYTES } from './answer-limit.js'
import { createBarbicanClient } from './barbican.js'
import { createGlanceClient } from './glance.js'
import { requestJson } from './http.js'
import { createKeystoneSession } from './keystone-session.js'

/** What a closed connection may have carried: the limit, plus what loopback socket buffers hold. */
const SENT_BOUND = OPENSTACK_ANSWER_LIMIT_BYTES + 24 * 1024 * 1024
/** Long enough that an unbounded read of an endless body would pull far more than SENT_BOUND. */
const LONG_MS = 4000
const SHORT_MS = 500
const WITHIN = { timeout: 60_000 }

/** The call against a server misbehaving `how` fails as `expected` says, and the connection is closed. */
async function bounded(
  how: Misbehaviour,
  call: (url: string, timeoutMs: number) => Promise<unknown>,
  expected: RegExp,
  options: Parameters<typeof hostileServer>[1] = {},
) {
  const server = await hostileServer(how, options)
  try {
    const timeoutMs = how === 'endless' ? LONG_MS : SHORT_MS
    const err = await call(server.url, timeoutMs).then(
      () => assert.fail('the call succeeded'),
      (e: unknown) => e,
    )
    assert.ok(err instanceof UnavailableError, `an UnavailableError, not ${String(err)}`)
    assert.match(err.message, expected)
    assert.ok(server.accepted > 0)
    const sent = await server.closed()
    assert.ok(sent < SENT_BOUND, `the server sent ${sent} bytes before the connection closed`)
  } finally {
    await server.stop()
  }
}

const TOO_LARGE = /answer is larger than 8 MiB/
const TOO_SLOW = (ms: number) => new RegExp(`no complete answer within ${ms} ms`)

void describe('requestJson: Placement, Nova, Glance and Barbican metadata, Keystone validation', () => {
  const get = (url: string, timeoutMs: number) =>
    requestJson({ service: 'Placement', url, headers: {}, timeoutMs }, 'GET', '/resource_providers')
  it('an endless body stops at the answer limit', WITHIN, () => bounded('endless', get, TOO_LARGE))
  it('headers and then nothing end at the time limit', WITHIN, () =>
    bounded('stall', get, TOO_SLOW(SHORT_MS)),
  )
  it('a trickle ends at the time limit', WITHIN, () => bounded('trickle', get, TOO_SLOW(SHORT_MS)))
  it('an error answer with an endless body stops at the limit too', WITHIN, () =>
    bounded('endless', get, TOO_LARGE, { status: 500 }),
  )
})

void describe('Keystone password auth', () => {
  const token = (url: string, timeoutMs: number) =>
    createKeystoneSession({
      authUrl: `${url}/v3`,
      username: 'cyborg',
      password: 'secret',
      projectName: 'service',
      timeoutMs,
    }).token()
  it('an endless body stops at the answer limit', WITHIN, () =>
    bounded('endless', token, TOO_LARGE),
  )
  it('headers and then nothing end at the time limit', WITHIN, () =>
    bounded('stall', token, TOO_SLOW(SHORT_MS)),
  )
  it('a trickle ends at the time limit', WITHIN, () =>
    bounded('trickle', token, TOO_SLOW(SHORT_MS)),
  )
})

void describe("Barbican's certificate payload", () => {
  const uuid = '5a6b0f0e-4b7c-4d8e-9f00-0123456789ab'
  const metadata = (path: string) =>
    path.endsWith('/payload') ? undefined : { secret_type: 'certificate' }
  const certificate = (url: string, timeoutMs: number) =>
    createBarbicanClient({ endpoint: url, timeoutMs }).getCertificate(uuid, 'image-1')
  for (const how of ['endless', 'stall', 'trickle'] as const)
    it(`${how}: bounded`, WITHIN, () =>
      bounded(how, certificate, how === 'endless' ? TOO_LARGE : TOO_SLOW(SHORT_MS), {
        answer: metadata,
        contentType: 'application/octet-stream',
      }),
    )
})

void describe("Glance's image download: bounded by the image's size, and idle and overall times", () => {
  let dir: string
  const dest = () => join(dir, 'bitstream')
  after(() => dir && rm(dir, { recursive: true, force: true }))
  const download = async (url: string, timeoutMs: number) => {
    dir ??= await mkdtemp(join(tmpdir(), 'cyborg-glance-'))
    const image = { id: 'img-1', hashAlgo: 'sha512', hashValue: 'f'.repeat(128), size: 100_000 }
    // Short for the endless body (without its size bound, a download writes all it gets to disk
    // for 10 × this), yet long enough that a loaded machine's pauses do not end it first.
    const ms = timeoutMs === LONG_MS ? 1000 : timeoutMs
    return createGlanceClient({ endpoint: url, timeoutMs: ms }).download(image, dest())
  }
  it('a body longer than the declared size stops there, and no file is left', WITHIN, async () => {
    await bounded('endless', download, /more than its declared size of 100000 bytes/, {
      contentType: 'application/octet-stream',
    })
    await assert.rejects(stat(dest()), { code: 'ENOENT' })
  })
  it('headers and then nothing end after the idle time', WITHIN, async () => {
    await bounded('stall', download, /no data for 500 ms/, {
      contentType: 'application/octet-stream',
    })
    await assert.rejects(stat(dest()), { code: 'ENOENT' })
  })
  it('a trickle ends at the overall time limit', WITHIN, () =>
    bounded('trickle', download, /not complete within 5 s/, {
      contentType: 'application/octet-stream',
    }),
  )
})
