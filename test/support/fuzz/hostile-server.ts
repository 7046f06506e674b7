/**
 * An HTTP server on 127.0.0.1 that answers a status line and then misbehaves, for the tests of
 * the bounds on outbound calls (docs/auth-outbound.md, Limits): `endless` streams 64 KiB chunks
 * as fast as the client reads them, `stall` sends its headers and then nothing, `trickle` sends
 * one byte every 20 ms. It never ends an answer by itself: only the client closing the connection
 * ends it, and `closed()` tells when every connection it accepted is gone, with the bytes it
 * sent on them.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type Misbehaviour = 'endless' | 'stall' | 'trickle'

export interface HostileServer {
  url: string
  /** Connections accepted so far. */
  readonly accepted: number
  /** Resolves once every accepted connection is closed: the bytes written on them, in total. */
  closed(): Promise<number>
  stop(): Promise<void>
}

const CHUNK = Buffer.alloc(64 * 1024, 0x20)

export interface HostileOptions {
  /** @default 200 */
  status?: number
  /** @default 'application/json' */
  contentType?: string
  /** A well-behaved JSON answer for the paths it returns one for (Barbican's metadata before its payload). */
  answer?: (path: string) => unknown
}

export async function hostileServer(
  how: Misbehaviour,
  options: HostileOptions = {},
): Promise<HostileServer> {
  const { status = 200, contentType = 'application/json', answer } = options
  const sockets = new Set<Socket>()
  let accepted = 0
  let written = 0
  let waiters: (() => void)[] = []
  const server: Server = createServer((req, res) => {
    req.resume()
    const normal = answer?.(req.url ?? '/')
    if (normal !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(normal))
      return
    }
    res.writeHead(status, { 'content-type': contentType })
    res.flushHeaders()
    if (how === 'stall') return
    if (how === 'trickle') {
      const timer = setInterval(() => res.write(' '), 20)
      res.on('close', () => clearInterval(timer))
      return
    }
    const pump = () => {
      while (!res.destroyed && res.write(CHUNK));
      if (!res.destroyed) res.once('drain', pump)
    }
    pump()
  })
  server.on('connection', (socket: Socket) => {
    accepted++
    sockets.add(socket)
    socket.on('close', () => {
      written += socket.bytesWritten
      sockets.delete(socket)
      if (sockets.size === 0) for (const w of waiters.splice(0)) w()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get accepted() {
      return accepted
    },
    closed: () =>
      new Promise<number>((resolve) => {
        if (sockets.size === 0) resolve(written)
        else waiters.push(() => resolve(written))
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        waiters = []
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
