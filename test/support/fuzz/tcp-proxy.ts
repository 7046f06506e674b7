/**
 * A TCP proxy between a database client and its server, for tests that lose a COMMIT: it relays
 * bytes both ways, and once armed it cuts the next connection whose client sends a COMMIT, either
 * after handing the COMMIT on (the server commits, the client never hears so) or before (the server
 * never sees it and rolls back). A COMMIT is the word `commit` in a client packet, any case: a
 * simple-query message on PostgreSQL, a COM_QUERY packet on MariaDB (`commit_markers` does not count).
 */
import { connect, createServer, type Socket } from 'node:net'

export type CutWhen = 'after-commit' | 'before-commit'

export interface TcpProxy {
  /** The port to connect to (on 127.0.0.1). */
  readonly port: number
  /**
   * Cuts the next connection whose client sends a COMMIT, then relays normally again; with
   * `thenRefuse`, sets `refuse` at the cut.
   */
  cutAtNextCommit(when: CutWhen, options?: { thenRefuse?: boolean }): void
  /** While true, new connections are closed at once: the database looks unreachable. */
  refuse: boolean
  /** Connections cut at a COMMIT so far. */
  readonly cuts: number
  close(): Promise<void>
}

const COMMIT = /\bcommit\b/i

/** Writes `chunk` to `to`, pausing `from` until `to` drains. */
function relay(from: Socket, to: Socket, chunk: Buffer): void {
  if (!to.write(chunk)) {
    from.pause()
    to.once('drain', () => from.resume())
  }
}

/** Starts a proxy on 127.0.0.1 (a free port) to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let armed: { when: CutWhen; thenRefuse: boolean } | undefined
  let cuts = 0
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {}) // a cut makes the other side fail; that is the point
  }

  const server = createServer((client) => {
    track(client)
    if (proxy.refuse) return void client.destroy()
    const upstream = connect(target.port, target.host)
    track(upstream)
    let answersLost = false
    client.on('data', (chunk) => {
      if (armed === undefined || !COMMIT.test(chunk.toString('latin1')))
        return relay(client, upstream, chunk)
      const { when, thenRefuse } = armed
      armed = undefined
      cuts++
      if (thenRefuse) proxy.refuse = true
      if (when === 'after-commit') {
        // end(), not destroy(): the COMMIT goes out, then a FIN, so the server reads and runs it.
        answersLost = true
        upstream.end(chunk)
        client.destroy()
      } else {
        client.destroy()
        upstream.destroy()
      }
    })
    upstream.on('data', (chunk) => {
      if (!answersLost) relay(upstream, client, chunk)
    })
    client.on('close', () => {
      if (!answersLost) upstream.destroy()
    })
    upstream.on('close', () => client.destroy())
    upstream.on('end', () => upstream.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address')

  const proxy: TcpProxy = {
    port: address.port,
    refuse: false,
    get cuts() {
      return cuts
    },
    cutAtNextCommit(when, { thenRefuse = false } = {}) {
      armed = { when, thenRefuse }
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return proxy
}
