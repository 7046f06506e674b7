/**
 * A webhook receiver for tests: a node:http server on 127.0.0.1 that records every request, checks
 * its Standard Webhooks signature with its own verifier (written here from the convention, not
 * with the signer of src/), and answers what the test says.
 *
 * The convention (https://www.standardwebhooks.com/): `webhook-signature` is a space-separated
 * list of `v<version>,<base64>`; a `v1` one is the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`
 * keyed by the base64-decoded part of the `whsec_` secret; `webhook-timestamp` is unix seconds,
 * to be refused when more than 5 minutes from the receiver's clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'

/** Why a delivery fails verification, or null when it passes. */
export function verifyStandardWebhook(
  secret: string,
  headers: IncomingHttpHeaders,
  rawBody: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): string | null {
  const one = (name: string) => {
    const v = headers[name]
    return Array.isArray(v) ? undefined : v
  }
  const id = one('webhook-id')
  const timestamp = one('webhook-timestamp')
  const signatures = one('webhook-signature')
  if (!id || !timestamp || !signatures) return 'a webhook-* header is missing'
  if (!/^\d+$/.test(timestamp)) return `timestamp ${timestamp} is not unix seconds`
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds)
    return `timestamp ${timestamp} is more than ${toleranceSeconds} s from ${nowSeconds}`
  if (!secret.startsWith('whsec_')) return 'the secret lacks its whsec_ prefix'
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest()
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',')
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue
    const given = Buffer.from(entry.slice(comma + 1), 'base64')
    if (given.length === expected.length && timingSafeEqual(given, expected)) return null
  }
  return `no v1 signature matches (got ${signatures})`
}

/** One request the receiver got. */
export interface Received {
  id: string
  timestamp: number
  body: { type: string; timestamp: string; data: Record<string, unknown> }
  /** The status it was answered with. */
  status: number
  /** Why its signature did not verify; null when it did. */
  invalid: string | null
  /** Requests being handled at the same time, this one included. */
  concurrent: number
  /** Whether its answer reached a live connection (false while held, or when the sender died first). */
  answered: boolean
}

export interface Receiver {
  url: string
  /** Every request, in arrival order. */
  received: Received[]
  /** Requests answered 2xx, in arrival order. */
  accepted(): Received[]
  /** The secret to verify with (set once the webhook is created). */
  secret: string
  /** Answers the held requests and holds no more (see `holdAfter`). */
  open(): void
  /** Requests whose answers wait for `open()` on a connection still open (in flight at their sender). */
  held(): number
  close(): Promise<void>
}

export interface ReceiverOptions {
  /** The status of the `n`-th request (0-based). @default 204 */
  answer?: (n: number, id: string) => number
  /** Milliseconds before answering. @default 0 */
  delayMs?: number
  /** The port to listen on (a receiver coming back where it was). @default 0: any free one */
  port?: number
  /**
   * Answers the first `holdAfter` requests, then holds every later answer until `open()`: the
   * deliveries stay outstanding for as long as the test needs, with no timer to race.
   * @default undefined: holds nothing
   */
  holdAfter?: number
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const { answer = () => 204, delayMs = 0, port = 0, holdAfter } = options
  let inFlight = 0
  let open = holdAfter === undefined
  const held: { res: ServerResponse; reply: () => void }[] = []
  const receiver: Receiver = {
    url: '',
    received: [],
    secret: '',
    accepted: () => receiver.received.filter((r) => r.status < 300),
    open() {
      open = true
      for (const h of held.splice(0)) h.reply()
    },
    held: () => held.filter((h) => !h.res.destroyed).length,
    close() {
      receiver.open()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
  const server: Server = createServer((req, res) => {
    inFlight++
    const concurrent = inFlight
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const id = String(req.headers['webhook-id'])
      const n = receiver.received.length
      const status = answer(n, id)
      const entry: Received = {
        id,
        timestamp: Number(req.headers['webhook-timestamp']),
        body: JSON.parse(raw) as Received['body'],
        status,
        invalid: verifyStandardWebhook(receiver.secret, req.headers, raw),
        concurrent,
        answered: false,
      }
      receiver.received.push(entry)
      const reply = () =>
        setTimeout(() => {
          inFlight--
          // 'finish' comes only when the answer was handed to a live connection.
          res.once('finish', () => (entry.answered = true))
          res.writeHead(status).end()
        }, delayMs)
      if (open || n < (holdAfter ?? 0)) reply()
      else held.push({ res, reply })
    })
  })
  server.keepAliveTimeout = 100
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const address = server.address()
  receiver.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`
  return receiver
}

/** Waits until `check` holds, polling; fails with `what` after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
