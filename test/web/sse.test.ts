/** The dashboard's server-sent events reader (web/sse.ts), without a browser. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sseReader, type SseMessage } from '../../web/sse.js'

test('reads messages cut anywhere, with comments, ids, types, CRLF and retry', () => {
  const got: SseMessage[] = []
  const retries: number[] = []
  const ids: string[] = []
  const feed = sseReader(
    (m) => got.push(m),
    (ms) => retries.push(ms),
    (id) => ids.push(id),
  )
  const text =
    'retry: 2000\nid: 7\n\nid: 8\nevent: accelerator.device.health_changed\ndata: {"id":8}\n\n' +
    ': ping\n\nid: 9\r\ndata: a\r\ndata:b\r\n\r\ndata: no id\n\nevent: x\n\n'
  for (let i = 0; i < text.length; i += 3) feed(text.slice(i, i + 3))
  assert.deepEqual(retries, [2000])
  assert.deepEqual(ids, ['7', '8', '9'], 'an id without data counts too')
  assert.deepEqual(got, [
    { id: '8', event: 'accelerator.device.health_changed', data: '{"id":8}' },
    { id: '9', event: 'message', data: 'a\nb' },
    { id: '9', event: 'message', data: 'no id' },
  ])
})
