/**
 * A webhook attempt is bounded as a whole (docs/webhooks.md, Limits): against a receiver that
 * answers a status line and then misbehaves (test/support/fuzz/hostile-server.ts), the attempt ends
 * within `timeout_seconds` with at most 64 KiB of the answer's body read, and the connection is
 * closed. A well-behaved receiver's connection is kept and used again.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { hostileServer, type Misbehaviour } from '../../../test/support/fuzz/hostile-server.js'
import { createWebhookPoster, type PostResult } from './webhook-post.js'

/** The answer limit, plus what loopback socket buffers may hold. */
const SENT_BOUND = 64 * 1024 + 24 * 1024 * 1024
const WITHIN = { timeout: 30_000 }

/** One attempt against a receiver misbehaving `how`: its result, once its connection is closed. */
async function attempt(how: Misbehaviour, status: number, timeoutMs: number): Promise<PostResult> {
  const server = await hostileServer(how, { status })
  const poster = createWebhookPoster(timeoutMs)
  try {
    const result = await poster.post(
      `${server.url}/hook`,
      { 'content-type': 'application/json' },
      '{}',
    )
    const sent = await server.closed()
    assert.ok(sent < SENT_BOUND, `the receiver sent ${sent} bytes before the connection closed`)
    return result
  } finally {
    poster.close()
    await server.stop()
  }
}

void describe('webhook attempts are bounded in time and bytes', () => {
  it(
    'an endless body after a 2xx: the status stands, the body is cut at 64 KiB',
    WITHIN,
    async () => {
      // A long time limit: the bound that ends this is the size.
      const result = await attempt('endless', 200, 20_000)
      assert.deepEqual(result, { status: 200, error: null })
    },
  )
  it('an endless body after a 500: a failed attempt that says so', WITHIN, async () => {
    const result = await attempt('endless', 500, 20_000)
    assert.deepEqual(result, { status: 500, error: 'HTTP 500 (answer cut at 64 KiB)' })
  })
  it('headers and then nothing: a failed attempt at the time limit', WITHIN, async () => {
    const result = await attempt('stall', 200, 500)
    assert.deepEqual(result, {
      status: 200,
      error: 'HTTP 200, but the answer did not end within 0.5 s',
    })
  })
  it('a trickle: a failed attempt at the time limit', WITHIN, async () => {
    const result = await attempt('trickle', 200, 500)
    assert.deepEqual(result, {
      status: 200,
      error: 'HTTP 200, but the answer did not end within 0.5 s',
    })
  })
  it("a well-behaved receiver's connection is used again", WITHIN, async () => {
    const server = await hostileServer('stall', { answer: () => ({ ok: true }) })
    const poster = createWebhookPoster(5000)
    try {
      for (let i = 0; i < 3; i++)
        assert.deepEqual(await poster.post(`${server.url}/hook`, {}, '{}'), {
          status: 200,
          error: null,
        })
      assert.equal(server.accepted, 1)
    } finally {
      poster.close()
      await server.stop()
    }
  })
})
