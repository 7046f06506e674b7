/**
 * What stands around the production shape in its benchmarks: a Nova stand-in (answers every
 * `POST /os-server-external-events` with 200 and each event delivered) and a counting proxy in
 * front of Placement (forwards every call, counts them by method and path with UUIDs folded).
 */
import { createServer, request, Agent, type Server } from 'node:http'

export interface StandIn {
  url: string
  stop(): Promise<void>
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
}

const close = (server: Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** Nova's external-events API as Nova answers it when every instance is waiting: 200, each event 200. */
export async function startNovaStandIn(): Promise<StandIn & { events(): number }> {
  let events = 0
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => {
      let parsed: { events?: Record<string, unknown>[] } = {}
      try {
        parsed = JSON.parse(body || '{}') as typeof parsed
      } catch {
        // answered below with no events
      }
      const list = (parsed.events ?? []).map((e) => ({ ...e, code: 200, status: 'completed' }))
      events += list.length
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ events: list }))
    })
  })
  return { url: await listen(server), stop: close(server), events: () => events }
}

/** Placement's calls, counted per `METHOD /path/{uuid}` since the last `take()`. */
export async function startCountingProxy(
  target: string,
): Promise<StandIn & { take(): Record<string, number> }> {
  const to = new URL(target)
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  let counts: Record<string, number> = {}
  const server = createServer((req, res) => {
    const key = `${req.method} ${(req.url ?? '').replace(/\?.*/, '').replace(/[0-9a-f-]{36}/g, '{uuid}')}`
    counts[key] = (counts[key] ?? 0) + 1
    const upstream = request(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    upstream.on('error', (err) => {
      res.writeHead(502)
      res.end(String(err))
    })
    req.pipe(upstream)
  })
  const stop = close(server)
  return {
    url: await listen(server),
    take() {
      const out = counts
      counts = {}
      return out
    },
    async stop() {
      await stop()
      agent.destroy()
    },
  }
}
