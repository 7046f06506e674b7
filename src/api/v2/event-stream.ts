/**
 * One client of `GET /v2/events/stream`: the response, taken over from Fastify (hijacked), written
 * as server-sent events. It catches up from its position (Last-Event-ID or `since`) with reads of
 * its own, then takes what the process's poller (./event-hub.ts) hands out, holding the poller's
 * events back meanwhile and sending each id at most once. A client that does not read (more than
 * {@link MAX_BUFFER} waiting in its socket) is dropped: it reconnects with Last-Event-ID.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  eventMatches,
  latestEventId,
  listEventsAfter,
  type EventFilter,
  type EventView,
} from '../../db/reads/event-reads.js'
import type { HubEvent } from './event-hub.js'
import type { V2Env } from './env.js'

/** Bytes waiting in a client's socket before it is dropped. */
const MAX_BUFFER = 1024 * 1024
/** Poller events held back while a client catches up, before it is dropped. */
const MAX_QUEUE = 10_000
/** Ids remembered per client to send each once. */
const REMEMBER = 5000
const BATCH = 500

/** Resolves when `raw` can take more, or is gone. */
function drained(raw: FastifyReply['raw']): Promise<void> {
  return new Promise((resolve) => {
    raw.once('drain', resolve)
    raw.once('close', resolve)
  })
}

/** One SSE message: `id`, `event` (the event's type) and `data` (its JSON, one line). */
export function sseFrame(e: EventView): string {
  return `id: ${e.id}\nevent: ${e.event_type}\ndata: ${JSON.stringify(e)}\n\n`
}

export async function openEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  env: V2Env,
  filter: EventFilter,
  resumeAfter: number | undefined,
): Promise<void> {
  const cursor = resumeAfter ?? (await latestEventId(env.db))
  reply.hijack()
  const raw = reply.raw
  for (const [name, value] of Object.entries(reply.getHeaders()))
    if (value !== undefined) raw.setHeader(name, value)
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-store',
    'x-accel-buffering': 'no',
  })
  if (request.method === 'HEAD') {
    raw.end()
    return
  }
  // Its position first, as an id without data: a client that drops before any event resumes here.
  raw.write(`retry: 2000\nid: ${cursor}\n\n`)
  raw.socket?.setNoDelay(true)

  const sent = new Set<number>()
  let queue: HubEvent[] | undefined = []
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    raw.end()
  }
  const send = (e: EventView): boolean => {
    if (ended || sent.has(e.id) || !eventMatches(filter, e)) return true
    sent.add(e.id)
    if (sent.size > REMEMBER) sent.delete(sent.values().next().value!)
    return raw.write(sseFrame(e))
  }
  const remove = await env.events.add({
    deliver(events) {
      if (queue !== undefined) {
        queue.push(...events)
        if (queue.length > MAX_QUEUE) end()
        return
      }
      for (const h of events) if (h.late || h.event.id > cursor) send(h.event)
      if (raw.writableLength > MAX_BUFFER) {
        request.log.info('event stream: client too slow, dropped (it resumes with Last-Event-ID)')
        end()
      }
    },
    heartbeat: () => void (ended || raw.write(': ping\n\n')),
    close: end,
  })
  raw.on('close', () => {
    ended = true
    remove()
  })
  try {
    // Those below the position that committed late and the client may have missed while away.
    if (resumeAfter !== undefined)
      for (const e of env.events.recentLate()) if (e.id <= cursor) send(e)
    for (let after = cursor; !ended;) {
      const page = await listEventsAfter(env.db, filter, { after, limit: BATCH })
      for (const e of page) if (!send(e) && !ended) await drained(raw)
      if (page.length < BATCH) break
      after = page[page.length - 1]!.id
    }
  } catch (err) {
    request.log.warn({ err }, 'event stream: catching up failed; closed')
    end()
  }
  const held = queue
  queue = undefined
  for (const h of held) if (h.late || h.event.id > cursor) send(h.event)
}
