/**
 * bench/events.ts's helper process `--role sinks`: the RabbitMQ consumer and the webhook receiver,
 * and the figures both sides share. Split from bench/events.ts to keep files short.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

import { connect, type ConsumeMessage } from 'amqplib'

import { parseTransportUrl } from '../../src/bus/transport-url.js'

export const BOUND = 'accelerator.arq.bound'

// ---------------------------------------------------------------------------------------------
// Shared figures

export interface Percentiles {
  p50: number | null
  p99: number | null
  max: number | null
}

export const round2 = (x: number) => Math.round(x * 100) / 100

/** Nearest-rank percentiles of `xs`, in their unit, 2 decimals. */
export function percentiles(xs: readonly number[]): Percentiles {
  if (xs.length === 0) return { p50: null, p99: null, max: null }
  const s = [...xs].sort((a, b) => a - b)
  const at = (q: number) => round2(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!)
  return { p50: at(0.5), p99: at(0.99), max: round2(s[s.length - 1]!) }
}

/** What the sinks child answers about one sink for one round. */
export interface SinkReport {
  events: number
  byType: Record<string, number>
  /** Events ÷ seconds from the storm's start to the last arrival. */
  eventsPerSecond: number
  /** Events that arrived before the storm ended ÷ the storm's seconds. */
  eventsPerSecondDuringStorm: number
  bound: {
    expected: number
    received: number
    missing: number
    unexpected: number
    duplicates: number
  }
  /** Webhook requests without the webhook-id/-timestamp headers or a `v1,` signature; RabbitMQ messages not in envelope 2.0. */
  malformed: number
  lagMs: number[]
  boundLagMs: number[]
}

export interface SinkStatus {
  events: number
  /** Expected bound ARQs whose event has not arrived. */
  missing: number
  lastAt: number
}

export type SinkCommand =
  | { cmd: 'reset' }
  | { cmd: 'expect'; uuids: string[]; rabbitBound: boolean; webhookBound: boolean }
  | { cmd: 'status' }
  | { cmd: 'report'; stormStart: number; stormEnd: number }

export type FromSinks =
  { kind: 'ready'; webhookUrl: string } | { kind: 'reply'; seq: number; value: unknown }

// ---------------------------------------------------------------------------------------------
// Role `sinks`: the RabbitMQ consumer and the webhook receiver, in their own process.

/** The events one sink got, as parallel arrays. */
class Arrivals {
  types: string[] = []
  resources: string[] = []
  lags: number[] = []
  ats: number[] = []
  malformed = 0

  add(type: string, resource: string, createdAtMs: number, at: number) {
    this.types.push(type)
    this.resources.push(resource)
    this.lags.push(at - createdAtMs)
    this.ats.push(at)
  }

  clear() {
    this.types = []
    this.resources = []
    this.lags = []
    this.ats = []
    this.malformed = 0
  }
}

/** oslo's timestamp, `2026-11-25 10:12:15.123456` (UTC, the fraction absent when zero), in epoch ms. */
export const osloMs = (ts: string) => Date.parse(`${ts.replace(' ', 'T')}Z`)

export async function serveSinks(amqpUrl: string): Promise<void> {
  const rabbit = new Arrivals()
  const webhook = new Arrivals()
  let expected = new Set<string>()
  let rabbitBound = true
  let webhookBound = true

  const broker = parseTransportUrl(amqpUrl)[0]!
  const model = await connect({
    protocol: 'amqp',
    hostname: broker.hostname,
    port: broker.port,
    username: broker.username ?? 'guest',
    password: broker.password ?? 'guest',
    vhost: encodeURIComponent(broker.vhost),
  })
  const channel = await model.createChannel()
  // What oslo's rabbit driver (and src/bus/rabbitmq-notifier.ts) declares: declared first here, so
  // that nothing the conductor sends is lost before this consumer starts.
  await channel.assertExchange('cyborg', 'topic', { durable: false, autoDelete: false })
  const onMessage = (msg: ConsumeMessage | null) => {
    if (!msg) return
    const at = Date.now()
    try {
      const envelope = JSON.parse(msg.content.toString('utf8')) as { 'oslo.message'?: string }
      const m = JSON.parse(envelope['oslo.message'] ?? '') as {
        event_type: string
        timestamp: string
        payload: { 'cyborg_object.data'?: { uuid?: string } }
      }
      rabbit.add(m.event_type, m.payload['cyborg_object.data']?.uuid ?? '', osloMs(m.timestamp), at)
    } catch {
      rabbit.malformed++
    }
  }
  for (const queue of ['notifications.info', 'notifications.error']) {
    await channel.assertQueue(queue, { durable: false, autoDelete: false, exclusive: false })
    await channel.bindQueue(queue, 'cyborg', queue)
    await channel.consume(queue, onMessage, { noAck: true })
  }

  const receive = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = Date.now()
      res.writeHead(200).end()
      const id = req.headers['webhook-id']
      const ts = req.headers['webhook-timestamp']
      const sig = req.headers['webhook-signature']
      if (!id || !ts || typeof sig !== 'string' || !sig.split(' ').some((s) => s.startsWith('v1,')))
        webhook.malformed++
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          type: string
          timestamp: string
          data: { resource_uuid?: string }
        }
        webhook.add(body.type, body.data.resource_uuid ?? '', Date.parse(body.timestamp), at)
      } catch {
        webhook.malformed++
      }
    })
  }
  const server = createServer(receive)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }

  const missingOf = (a: Arrivals, wants: boolean) => {
    if (!wants) return 0
    const seen = new Set<string>()
    for (let i = 0; i < a.types.length; i++) if (a.types[i] === BOUND) seen.add(a.resources[i]!)
    let missing = 0
    for (const u of expected) if (!seen.has(u)) missing++
    return missing
  }
  const status = (a: Arrivals, wants: boolean): SinkStatus => ({
    events: a.types.length,
    missing: missingOf(a, wants),
    lastAt: a.ats.length ? a.ats[a.ats.length - 1]! : 0,
  })
  const report = (a: Arrivals, wants: boolean, stormStart: number, stormEnd: number) => {
    const byType: Record<string, number> = {}
    const bound = new Map<string, number>()
    const boundLagMs: number[] = []
    for (let i = 0; i < a.types.length; i++) {
      const type = a.types[i]!
      byType[type] = (byType[type] ?? 0) + 1
      if (type !== BOUND) continue
      bound.set(a.resources[i]!, (bound.get(a.resources[i]!) ?? 0) + 1)
      boundLagMs.push(a.lags[i]!)
    }
    const n = a.types.length
    const last = n ? Math.max(...a.ats) : stormStart
    const during = a.ats.filter((t) => t <= stormEnd).length
    const out: SinkReport = {
      events: n,
      byType,
      eventsPerSecond: n ? Math.round(n / ((last - stormStart) / 1000)) : 0,
      eventsPerSecondDuringStorm: Math.round(during / ((stormEnd - stormStart) / 1000)),
      bound: {
        expected: wants ? expected.size : 0,
        received: bound.size,
        missing: missingOf(a, wants),
        unexpected: [...bound.keys()].filter((u) => !expected.has(u)).length,
        duplicates: [...bound.values()].reduce((s, c) => s + c - 1, 0),
      },
      malformed: a.malformed,
      lagMs: a.lags,
      boundLagMs,
    }
    return out
  }

  const send = (m: FromSinks) => process.send!(m)
  process.on('message', (m: SinkCommand & { seq: number }) => {
    let value: unknown = null
    if (m.cmd === 'reset') {
      rabbit.clear()
      webhook.clear()
      expected = new Set()
    } else if (m.cmd === 'expect') {
      expected = new Set(m.uuids)
      rabbitBound = m.rabbitBound
      webhookBound = m.webhookBound
    } else if (m.cmd === 'status') {
      value = { rabbitmq: status(rabbit, rabbitBound), webhook: status(webhook, webhookBound) }
    } else {
      value = {
        rabbitmq: report(rabbit, rabbitBound, m.stormStart, m.stormEnd),
        webhook: report(webhook, webhookBound, m.stormStart, m.stormEnd),
      }
    }
    send({ kind: 'reply', seq: m.seq, value })
  })
  process.on('SIGTERM', () => {
    server.closeAllConnections()
    server.close()
    void model.close().finally(() => process.exit(0))
  })
  send({ kind: 'ready', webhookUrl: `http://127.0.0.1:${port}/hook` })
}
