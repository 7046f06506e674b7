/**
 * HTTP/1.1 over a raw socket, for the tests that must see what a real client sees (Fastify's
 * `inject` bypasses Node's HTTP parser and its timeouts): send bytes exactly as given, then read
 * the answers until the expected number of final responses, the server's close, or a deadline.
 */
import { connect } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export interface RawExchange {
  /** Final (non-1xx) responses, in order. */
  responses: RawResponse[]
  /** Interim 1xx responses seen (e.g. 100 Continue). */
  interim: number[]
  /** The server closed the connection. */
  closed: boolean
  /** The deadline passed before the answers or the close came. */
  timedOut: boolean
  /** Bytes that do not parse as HTTP responses; empty when all was well-formed. */
  malformed: string
  /** ms from the first byte sent to the end of the exchange. */
  elapsedMs: number
}

export interface RawOptions {
  /** How many final responses to wait for. @default 1 */
  responses?: number
  /** The methods of the requests sent, in order, so that HEAD answers are read without a body. */
  methods?: string[]
  /** Give up after this long. @default 10000 */
  deadlineMs?: number
  /** Wait for the server to close the connection, even after the responses came. */
  untilClosed?: boolean
  /** Write these pieces one by one, this many ms apart (a slow client). */
  pieces?: { chunks: (string | Buffer)[]; gapMs: number }
}

/** Sends `data` to 127.0.0.1:`port` and collects the answers. */
export async function rawExchange(
  port: number,
  data: string | Buffer,
  options: RawOptions = {},
): Promise<RawExchange> {
  const { responses: wanted = 1, methods = [], deadlineMs = 10_000 } = options
  const started = Date.now()
  const socket = connect({ host: '127.0.0.1', port })
  let received = Buffer.alloc(0)
  let closed = false
  let parsed: ReturnType<typeof parseResponses> = {
    responses: [],
    interim: [],
    rest: Buffer.alloc(0),
    malformed: '',
  }
  return new Promise((resolve) => {
    let slow: NodeJS.Timeout | undefined
    const finish = (timedOut: boolean) => {
      clearTimeout(timer)
      clearInterval(slow)
      socket.destroy()
      parsed = parseResponses(received, methods, closed)
      resolve({ ...parsed, closed, timedOut, elapsedMs: Date.now() - started })
    }
    const timer = setTimeout(() => finish(true), deadlineMs)
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      parsed = parseResponses(received, methods, false)
      if ((parsed.responses.length >= wanted && !options.untilClosed) || parsed.malformed !== '')
        finish(false)
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      closed = true
      finish(false)
    })
    socket.on('connect', () => {
      if (!options.pieces) {
        socket.write(data)
        return
      }
      const queue = [...options.pieces.chunks]
      const next = () => {
        const piece = queue.shift()
        if (piece === undefined) clearInterval(slow)
        else if (!socket.destroyed) socket.write(piece)
      }
      next()
      slow = setInterval(next, options.pieces.gapMs)
    })
  })
}

/** Splits `buf` into responses; `final` means no more bytes will come (the server closed). */
function parseResponses(buf: Buffer, methods: string[], final: boolean) {
  const responses: RawResponse[] = []
  const interim: number[] = []
  let at = 0
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', at)
    if (headEnd < 0) break
    const [statusLine = '', ...lines] = buf.subarray(at, headEnd).toString('latin1').split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3})(?: [^\r\n]*)?$/.exec(statusLine)
    if (!m)
      return {
        responses,
        interim,
        rest: buf.subarray(at),
        malformed: `bad status line ${JSON.stringify(statusLine)}`,
      }
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      if (colon <= 0)
        return {
          responses,
          interim,
          rest: buf.subarray(at),
          malformed: `bad header line ${JSON.stringify(line)}`,
        }
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const status = Number(m[1])
    let bodyStart = headEnd + 4
    if (status < 200) {
      interim.push(status)
      at = bodyStart
      continue
    }
    const method = methods[responses.length] ?? 'GET'
    let body = ''
    // A request refused by the HTTP parser is answered with a body even when it began with HEAD
    // (the server cannot trust a method it failed to parse); that answer always closes.
    const refusedHead =
      method === 'HEAD' &&
      final &&
      headers.connection === 'close' &&
      buf.length - bodyStart === Number(headers['content-length'])
    if ((method !== 'HEAD' || refusedHead) && status !== 204 && status !== 304) {
      if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
        const chunked = readChunked(buf, bodyStart)
        if (chunked === undefined) break
        body = chunked.body
        bodyStart = chunked.end
      } else if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length'])
        if (!Number.isInteger(length) || length < 0) {
          return {
            responses,
            interim,
            rest: buf.subarray(at),
            malformed: `bad content-length ${headers['content-length']}`,
          }
        }
        if (buf.length < bodyStart + length) break
        body = buf.subarray(bodyStart, bodyStart + length).toString('utf8')
        bodyStart += length
      } else {
        // Delimited by the close.
        if (!final) break
        body = buf.subarray(bodyStart).toString('utf8')
        bodyStart = buf.length
      }
    }
    responses.push({ status, headers, body })
    at = bodyStart
  }
  const rest = buf.subarray(at)
  const malformed =
    final && rest.length > 0
      ? `incomplete response: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`
      : ''
  return { responses, interim, rest, malformed }
}

function readChunked(buf: Buffer, start: number): { body: string; end: number } | undefined {
  const parts: Buffer[] = []
  let at = start
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at)
    if (lineEnd < 0) return undefined
    const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16)
    if (Number.isNaN(size)) return undefined
    const dataStart = lineEnd + 2
    if (size === 0) {
      const trailerEnd = buf.indexOf('\r\n', dataStart)
      return trailerEnd < 0
        ? undefined
        : { body: Buffer.concat(parts).toString('utf8'), end: trailerEnd + 2 }
    }
    if (buf.length < dataStart + size + 2) return undefined
    parts.push(buf.subarray(dataStart, dataStart + size))
    at = dataStart + size + 2
  }
}

/** The paths of every route of `printRoutes({ commonPrefix: false })`'s tree, e.g. `/v2/devices/:uuid`. */
export function routePaths(tree: string): string[] {
  const stack: string[] = []
  const paths: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^((?:[│ ] {3})*)(?:├── |└── )(\S+)/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    stack.length = depth
    stack.push(m[2]!)
    paths.push(stack.join('').replace(/^\/\//, '/'))
  }
  return paths
}
