/**
 * Continuous Nova-style bind cycles against several APIs (issue 30's load under faults), shared by
 * test/cluster/faults.cluster.ts and bench/cluster.ts: each client in turn creates an ARQ of the storm
 * profile, binds it (PATCH), polls `?instance=&bind_state=resolved` until it answers, and deletes by
 * instance; clients take the APIs round-robin. Every write answered 2xx is recorded with its time,
 * so that a test can check each is still in the database and measure how long a fault stalled them
 * (the longest gap between two answered writes). A client that gets an error moves on to the next
 * cycle after a short pause, as Nova would fail the boot and the next one come.
 */
import { STORM_HOST, STORM_PROFILE } from './storm-inventory.js'

/** One write answered 2xx: its time (ms since the epoch) and what it was. */
export interface Write {
  at: number
  kind: 'create' | 'bind' | 'delete'
  instance: string
  /** The ARQ created (create, bind). */
  uuid?: string
}

export interface CycleLoad {
  writes: Write[]
  /** Cycles that ended in Bound and a 204 delete. */
  cycles(): number
  /** Failed steps by what failed (`bind 503`, `create network error`, …). */
  errors: Record<string, number>
  /** The first body of each failure with a status of 500 or more (what the API said). */
  samples: Record<string, string>
  /**
   * Instances whose delete was sent but not answered 204 (a 503 after the RPC timeout, no answer):
   * the conductor may still have deleted their requests.
   */
  deleteUnknown: Set<string>
  /** Handles seen held by two instances at once (must stay 0). */
  doubleHeld(): number
  /** Stops starting cycles and waits for the running ones to end. */
  stop(): Promise<void>
}

const json = { 'content-type': 'application/json' }

async function call(method: string, url: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : json,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  try {
    return { status: res.status, data: text ? (JSON.parse(text) as unknown) : null }
  } catch {
    return { status: res.status, data: text as unknown }
  }
}

type Arq = { uuid: string; state: string; attach_handle_uuid: string | null }

/** Starts `concurrency` clients; `prefix` (8 hex digits) keeps instance uuids apart between runs. */
export function startCycles(
  apiUrls: string[],
  providers: string[],
  concurrency: number,
  prefix = '5707a000',
): CycleLoad {
  const writes: Write[] = []
  const errors: Record<string, number> = {}
  const samples: Record<string, string> = {}
  const deleteUnknown = new Set<string>()
  const held = new Map<string, string>()
  let doubles = 0
  let cycles = 0
  let running = true
  let vm = 0
  const fail = (what: string, body?: unknown): void => {
    errors[what] = (errors[what] ?? 0) + 1
    if (body !== undefined && samples[what] === undefined)
      samples[what] = JSON.stringify(body).slice(0, 400)
  }
  const pause = () => new Promise((r) => setTimeout(r, 50))

  const cycle = async (api: string, n: number): Promise<void> => {
    const instance = `${prefix}-0000-4000-8000-${String(n).padStart(12, '0')}`
    const created = await call('POST', `${api}/v2/accelerator_requests`, {
      device_profile_name: STORM_PROFILE,
    })
    if (created.status !== 201) return fail(`create ${created.status}`, created.data)
    const arqs = (created.data as { arqs: Arq[] }).arqs
    for (const a of arqs) writes.push({ at: Date.now(), kind: 'create', instance, uuid: a.uuid })
    const patch = Object.fromEntries(
      arqs.map((a) => [
        a.uuid,
        [
          { path: '/hostname', op: 'add', value: STORM_HOST },
          { path: '/device_rp_uuid', op: 'add', value: providers[n % providers.length] },
          { path: '/instance_uuid', op: 'add', value: instance },
        ],
      ]),
    )
    const bound = await call('PATCH', `${api}/v2/accelerator_requests`, patch)
    if (bound.status !== 202) fail(`bind ${bound.status}`, bound.data)
    else for (const a of arqs) writes.push({ at: Date.now(), kind: 'bind', instance, uuid: a.uuid })
    if (bound.status === 202) {
      let resolved: { status: number; data: unknown }
      for (;;) {
        resolved = await call(
          'GET',
          `${api}/v2/accelerator_requests?instance=${instance}&bind_state=resolved`,
        )
        if (resolved.status !== 423) break
        await new Promise((r) => setTimeout(r, 20))
      }
      const got = (resolved.data as { arqs?: Arq[] } | null)?.arqs ?? []
      if (resolved.status !== 200 || got.some((a) => a.state !== 'Bound'))
        fail(`resolved ${resolved.status} ${got.map((a) => a.state).join(',')}`)
      for (const a of got) {
        if (!a.attach_handle_uuid) continue
        if (held.has(a.attach_handle_uuid)) doubles++
        held.set(a.attach_handle_uuid, instance)
      }
      // Held from the bound answer until the DELETE leaves: another VM seeing it then is a double.
      for (const a of got)
        if (a.attach_handle_uuid && held.get(a.attach_handle_uuid) === instance)
          held.delete(a.attach_handle_uuid)
    }
    // Nova deletes by instance whatever the bind's outcome (a 503 bind may still have landed).
    deleteUnknown.add(instance)
    const deleted = await call('DELETE', `${api}/v2/accelerator_requests?instance=${instance}`)
    if (deleted.status !== 204) return fail(`delete ${deleted.status}`, deleted.data)
    deleteUnknown.delete(instance)
    writes.push({ at: Date.now(), kind: 'delete', instance })
    if (bound.status === 202) cycles++
  }

  const client = async (c: number) => {
    while (running) {
      const n = vm++
      const api = apiUrls[(c + n) % apiUrls.length]!
      try {
        await cycle(api, n)
      } catch (err) {
        fail(`network error ${(err as Error).name}`)
        await pause()
      }
    }
  }
  const clients = Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)))
  return {
    writes,
    cycles: () => cycles,
    errors,
    samples,
    deleteUnknown,
    doubleHeld: () => doubles,
    async stop() {
      running = false
      await clients
    },
  }
}

/**
 * The longest time without an answered write in [from, to] (ms since the epoch), counting from the
 * last write before `from` to the first after it, and so on to the first write after `to`.
 */
export function longestGap(writes: Write[], from: number, to: number): number {
  const times = writes.map((w) => w.at).sort((a, b) => a - b)
  const start = times.filter((t) => t <= from).at(-1) ?? from
  const end = times.find((t) => t >= to) ?? Date.now()
  const inside = [start, ...times.filter((t) => t > start && t < end), end]
  let gap = 0
  for (let i = 1; i < inside.length; i++) gap = Math.max(gap, inside[i]! - inside[i - 1]!)
  return gap
}
