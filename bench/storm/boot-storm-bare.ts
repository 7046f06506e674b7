/**
 * The ceiling of bench/boot-storm.ts: a bare node:http server (no framework, no database) answering
 * exactly the calls the storm makes, from in-memory state with as little work as possible, so its
 * figure is what HTTP + JSON alone cost on this machine. Binds are Bound at once (no 423), each
 * taking an attach handle from a free list that DELETE gives back. Prints "ready <url>" on stdout.
 * Usage: boot-storm-bare.ts <port>
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { STORM_HOST } from '../../test/support/storm-inventory.js'

interface Arq {
  uuid: string
  profile: string
  instance: string | null
  hostname: string | null
  rp: string | null
  handle: string | null
  createdAt: string
}
type Op = { path: string; op: string; value: string }

const RP = randomUUID()
const PROFILE_UUID = randomUUID()
const DEPLOYABLES = JSON.stringify({
  deployables: [{ name: `${STORM_HOST}_0000:10:00.0`, rp_uuid: RP }],
})
const free: string[] = Array.from({ length: 256 }, () => randomUUID()) // attach handles not held by a bound ARQ
const arqs = new Map<string, Arq>()
const byInstance = new Map<string, Arq[]>()
let base = ''

function send(res: ServerResponse, status: number, data?: unknown): void {
  if (data === undefined) {
    res.writeHead(status, { 'content-length': 0 })
    res.end()
    return
  }
  const body = typeof data === 'string' ? data : JSON.stringify(data)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString()))
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)))
      }
    })
    req.on('error', reject)
  })
}

/** The wire shape of an ARQ, every field of the real one, so that lists weigh the same. */
const view = (a: Arq) => ({
  uuid: a.uuid,
  state: a.handle ? 'Bound' : 'Initial',
  device_profile_name: a.profile,
  device_profile_group_id: 0,
  hostname: a.hostname,
  device_rp_uuid: a.rp,
  instance_uuid: a.instance,
  project_id: null,
  attach_handle_type: a.handle ? 'TEST_PCI' : '',
  attach_handle_uuid: a.handle,
  attach_handle_info: a.handle ? { bus: '10', device: '0', domain: '0000', function: '0' } : {},
  created_at: a.createdAt,
  updated_at: null,
  links: [{ href: `${base}/v2/accelerator_requests/${a.uuid}`, rel: 'self' }],
})

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const [path, search] = (req.url ?? '/').split('?', 2) as [string, string | undefined]
  const query = new URLSearchParams(search)
  if (path === '/v2/device_profiles' && req.method === 'GET') {
    const name = query.get('name') ?? ''
    return send(res, 200, {
      device_profiles: [{ name, uuid: PROFILE_UUID, groups: [{ 'resources:FPGA': '1' }] }],
    })
  }
  if (path === '/v2/deployables' && req.method === 'GET') return send(res, 200, DEPLOYABLES)
  if (path !== '/v2/accelerator_requests') return send(res, 404, { error: 'not found' })
  if (req.method === 'POST') {
    const { device_profile_name: profile } = (await readBody(req)) as {
      device_profile_name: string
    }
    const arq: Arq = {
      uuid: randomUUID(),
      profile,
      instance: null,
      hostname: null,
      rp: null,
      handle: null,
      createdAt: new Date().toISOString(),
    }
    arqs.set(arq.uuid, arq)
    return send(res, 201, { arqs: [view(arq)] })
  }
  if (req.method === 'PATCH') {
    const patch = (await readBody(req)) as Record<string, Op[]>
    for (const [uuid, ops] of Object.entries(patch)) {
      const arq = arqs.get(uuid)
      if (!arq || arq.instance) return send(res, arq ? 409 : 404, { error: `ARQ ${uuid}` })
      for (const o of ops) {
        if (o.path === '/hostname') arq.hostname = o.value
        else if (o.path === '/device_rp_uuid') arq.rp = o.value
        else if (o.path === '/instance_uuid') arq.instance = o.value
      }
      if (!arq.instance) return send(res, 400, { error: 'no /instance_uuid' })
      arq.handle = free.pop() ?? randomUUID()
      const list = byInstance.get(arq.instance)
      if (list) list.push(arq)
      else byInstance.set(arq.instance, [arq])
    }
    return send(res, 202)
  }
  const instance = query.get('instance')
  if (req.method === 'GET' && instance)
    return send(res, 200, { arqs: (byInstance.get(instance) ?? []).map(view) })
  if (req.method === 'GET') return send(res, 200, { arqs: [...arqs.values()].map(view) })
  if (req.method === 'DELETE' && instance) {
    for (const arq of byInstance.get(instance) ?? []) {
      if (arq.handle) free.push(arq.handle)
      arqs.delete(arq.uuid)
    }
    byInstance.delete(instance)
    return send(res, 204)
  }
  return send(res, 405, { error: 'method not allowed' })
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => send(res, 400, { error: String(err) }))
})
server.listen(Number(process.argv[2]), '127.0.0.1', () => {
  const { port } = server.address() as { port: number }
  base = `http://127.0.0.1:${port}`
  process.stdout.write(`ready ${base}\n`)
})
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
