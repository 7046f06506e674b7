/**
 * Answers to requests that never reach a route, in the compat-v2 error body like every other 4xx:
 * bytes Node's HTTP parser refuses (a malformed request line, header or body framing, headers too
 * large, a client too slow for `[api] headers_timeout`/`request_timeout`), and paths Fastify's
 * router refuses (a broken percent-encoding, a parameter over 100 characters). Each names the
 * problem; Fastify's defaults said only "Client Error".
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { errorBody, sendError } from './errors.js'

interface ParserError extends Error {
  code?: string
  /** llhttp's own words, e.g. "Invalid method encountered". */
  reason?: string
}

/** The status and message for a parser error or a client timeout. */
export function describeClientError(err: ParserError): { status: number; message: string } {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      message: 'The request was not received in time ([api] headers_timeout, request_timeout)',
    }
  }
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, message: 'The request headers are larger than 16 KiB' }
  const reason = (err.reason ?? err.message).replace(/\.$/, '')
  return {
    status: 400,
    message: `Malformed HTTP request: ${reason}${err.code ? ` (${err.code})` : ''}`,
  }
}

/** Fastify's `clientErrorHandler`: answers once if the socket can still take it, then closes. */
export function clientErrorHandler(log: Logger) {
  return (err: ParserError, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const { status, message } = describeClientError(err)
    log.debug({ code: err.code, status }, message)
    // As Node's own default does: never write into a response that has started on this socket
    // (a pipelined request whose body turns out malformed after its answer began).
    const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    if (socket.writable && current?.headersSent !== true) {
      const body = errorBody(status, message)
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ` +
          `application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: ` +
          `close\r\n\r\n${body}`,
      )
    }
    socket.destroy()
  }
}

/** Who is at the other end of `socket`: the same for a TLS socket and the TCP socket it wraps. */
const peerOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`

/**
 * `[api] headers_timeout` for a connection's first request, from the moment it is accepted: a
 * connection that has not sent a whole request head by then is answered 408 and closed (over
 * HTTPS, closed: it may not even have begun the TLS handshake). Node enforces `headersTimeout`
 * itself only from a periodic sweep of the connections its HTTP parser tracks, and an HTTPS
 * server's parser sees a connection only once its handshake is done, so a silent client would be
 * held until TLS's own 120 s handshake limit. Later requests on a kept-alive connection stay
 * under Node's check (`keepalive_timeout` between them).
 */
export function closeSilentConnections(
  server: Server,
  headersMs: number,
  log: Logger,
  tls: boolean,
): void {
  if (headersMs <= 0) return
  // Keyed by peer, not by socket: over HTTPS, 'connection' gives the TCP socket and 'request'
  // the TLS socket wrapped around it.
  const waiting = new Map<string, NodeJS.Timeout>()
  const timedOut = Object.assign(new Error('headers not received in time'), {
    code: 'ERR_HTTP_REQUEST_TIMEOUT',
  })
  const answer = clientErrorHandler(log)
  server.on('connection', (socket: Socket) => {
    const peer = peerOf(socket)
    const timer = setTimeout(() => {
      waiting.delete(peer)
      if (tls) socket.destroy()
      else answer(timedOut, socket)
    }, headersMs)
    waiting.set(peer, timer)
    socket.once('close', () => {
      if (waiting.get(peer) !== timer) return
      clearTimeout(timer)
      waiting.delete(peer)
    })
  })
  // 'request' comes once a request's head has been parsed.
  server.on('request', (request: IncomingMessage) => {
    if (waiting.size === 0) return
    const peer = peerOf(request.socket)
    clearTimeout(waiting.get(peer))
    waiting.delete(peer)
  })
}

/** Fastify's `frameworkErrors`: the router's refusals, before any route or hook runs. */
export function frameworkErrors(
  err: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const path = JSON.stringify(request.url.split('?')[0]?.slice(0, 200))
  if (err.code === 'FST_ERR_BAD_URL') {
    sendError(
      reply,
      400,
      `The path ${path} is not a valid URL: it has a malformed percent-encoding`,
    )
  } else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendError(reply, 414, `A path segment of ${path} is longer than 100 characters`)
  } else {
    sendError(reply, 400, err.message)
  }
}
