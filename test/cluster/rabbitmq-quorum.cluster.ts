/**
 * Clustered RabbitMQ (issue 30): with `[oslo_messaging_rabbit] rabbit_quorum_queue` the work queues
 * are quorum queues (classic without it), and RPC over a 3-node transport_url keeps working while
 * the node holding a queue's leader, or the node a client is connected to, stops and starts: calls
 * in flight complete or fail with a retryable error within their timeout, none gets another's
 * reply, confirmed work is handled exactly once, and queued work survives its leader's node.
 * Without quorum queues (the option ignored) the declarations below are refused or the work is
 * unreachable while its node is down, so these tests fail.
 *
 * Starts its own cluster with scripts/rabbitmq-cluster.sh (ports 5701-5703, or from
 * CYBORG_TEST_RABBIT_CLUSTER_PORT) in a temporary directory, and stops it at the end. Skipped when
 * this machine cannot (not root, no rabbitmq-server), unless CYBORG_REQUIRE_SERVICES=1.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { connect } from 'amqplib'
import type { MessageBus } from '../../src/bus/bus.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { AppError, UnavailableError } from '../../src/domain/errors.js'

const SCRIPT = new URL('../../scripts/rabbitmq-cluster.sh', import.meta.url).pathname
const PORT = Number(process.env.CYBORG_TEST_RABBIT_CLUSTER_PORT ?? 5701)
const CALL_TIMEOUT_MS = 8000
const RETRYABLE = ['BUS_CONNECTION_LOST', 'BUS_REFUSED', 'TIMEOUT']

function cannotRun(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (RabbitMQ nodes run as the rabbitmq user)'
  if (!existsSync('/usr/lib/rabbitmq/bin/rabbitmq-server'))
    return 'rabbitmq-server is not installed'
  return undefined
}

function sh(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', [SCRIPT, ...args], { timeout: 180_000 }, (err, stdout, stderr) =>
      err
        ? reject(new Error(`rabbitmq-cluster.sh ${args[0]}: ${stderr || err.message}`))
        : resolve(stdout),
    ),
  )
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

const skip = cannotRun()
if (skip !== undefined && process.env.CYBORG_REQUIRE_SERVICES === '1')
  throw new Error(`CYBORG_REQUIRE_SERVICES=1 but the RabbitMQ cluster test ${skip}`)

void describe('RabbitMQ cluster: quorum queues and failover', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-mq-cluster-'))
  const buses: MessageBus[] = []
  const node = (n: number) => `127.0.0.1:${PORT + n - 1}`
  /** The transport URL listing the nodes in this order (the first that answers wins). */
  const urlOf = (...order: number[]) =>
    `rabbit://${order.map((n) => `guest:guest@${node(n)}`).join(',')}/`
  const nodeName = (n: number) => `cyborg-mq-${PORT + n - 1}@localhost`

  before(async () => {
    const started = Date.now()
    await sh(['up', dir, String(PORT)])
    console.log(`# cluster up in ${Date.now() - started} ms`)
  })
  after(async () => {
    await Promise.all(buses.map((b) => b.close()))
    await sh(['down', dir]).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })

  const bus = async (quorumQueues: boolean, ...order: number[]) => {
    const b = await createRabbitMqBus({
      url: urlOf(...order),
      quorumQueues,
      drainTimeoutMs: 100,
      defaultTimeoutMs: CALL_TIMEOUT_MS,
      reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
    })
    buses.push(b)
    return b
  }

  /** Each queue's type and leader node, as a running node sees them. */
  const queues = async (from: number) => {
    const out = await sh([
      'ctl',
      dir,
      String(from),
      'list_queues',
      'name',
      'type',
      'durable',
      'leader',
    ])
    const rows = new Map<string, { type: string; durable: string; leader: string }>()
    for (const line of out.trim().split('\n')) {
      const [name, type, durable, leader] = line.split('\t')
      if (name && type) rows.set(name, { type, durable: durable ?? '', leader: leader ?? '' })
    }
    return rows
  }

  /** A queue declared through a connection to node n: its quorum leader starts there (client-local). */
  const declareOn = async (n: number, topic: string) => {
    const conn = await connect(`amqp://guest:guest@${node(n)}/`)
    const ch = await conn.createChannel()
    await ch.assertQueue(topic, { durable: true, arguments: { 'x-queue-type': 'quorum' } })
    await conn.close()
  }

  void it('the option on declares quorum queues (servers and callers); off, classic; the other type is refused clearly', async () => {
    const [quorum, classic] = await Promise.all([bus(true, 1, 2, 3), bus(false, 2, 3, 1)])
    const served = `cluster.${randomUUID()}`
    const unserved = `cluster.${randomUUID()}`
    const plain = `cluster.${randomUUID()}`
    await quorum.serve(served, async (_m, p) => p)
    await assert.rejects(quorum.call(unserved, 'echo', 1, { timeoutMs: 200 }), { code: 'TIMEOUT' })
    await classic.serve(plain, async (_m, p) => p)
    const seen = await queues(1)
    assert.deepEqual(seen.get(served)?.type, 'quorum')
    assert.deepEqual(
      seen.get(unserved)?.type,
      'quorum',
      'a caller declares the queue as its servers do',
    )
    assert.equal(seen.get(served)?.durable, 'true')
    assert.equal(seen.get(plain)?.type, 'classic')

    // A server with the option off finds the quorum queue: it refuses, naming the option and the fix.
    await assert.rejects(
      classic.serve(served, async () => null),
      (err: unknown) => {
        assert.ok(err instanceof UnavailableError)
        assert.equal(err.code, 'BUS_DECLARE_FAILED')
        assert.match(
          err.message,
          /exists as a quorum queue, but \[oslo_messaging_rabbit\] rabbit_quorum_queue = false/,
        )
        assert.match(err.message, /rabbitmqctl delete_queue/)
        return true
      },
    )
    // A caller only needs the queue to exist: its calls go through whatever the type.
    assert.equal(await classic.call(served, 'echo', 7), 7)
    assert.equal(await quorum.call(plain, 'echo', 8), 8)
  })

  /** Calls and casts from `client` to `topic` until stopped, each with a unique id. */
  const traffic = (client: MessageBus, topic: string) => {
    const calls: { id: string; ok: boolean; code?: string; ms: number; wrong?: unknown }[] = []
    const confirmed: string[] = []
    let running = true
    let n = 0
    const worker = async (w: number) => {
      while (running) {
        const id = `${w}-${n++}`
        const t0 = Date.now()
        try {
          if (w === 0) {
            await client.cast(topic, 'work', { id })
            confirmed.push(id)
            continue
          }
          const reply = (await client.call(
            topic,
            'echo',
            { id },
            { timeoutMs: CALL_TIMEOUT_MS },
          )) as { id: string }
          calls.push({
            id,
            ok: true,
            ms: Date.now() - t0,
            ...(reply.id === id ? {} : { wrong: reply }),
          })
        } catch (err) {
          calls.push({
            id,
            ok: false,
            code: err instanceof AppError ? err.code : String(err),
            ms: Date.now() - t0,
          })
          await sleep(50)
        }
      }
    }
    const workers = Promise.all([0, 1, 2, 3].map(worker))
    const okCount = () => calls.filter((c) => c.ok).length
    return {
      calls,
      confirmed,
      /** Waits until `more` calls more have succeeded. */
      async progress(what: string, more = 10) {
        const target = okCount() + more
        await until(what, () => okCount() >= target)
      },
      async stop() {
        running = false
        await workers
      },
    }
  }

  /** A server counting how often it handled each id. */
  const counting = async (server: MessageBus, topic: string) => {
    const handled = new Map<string, number>()
    await server.serve(topic, async (_method, payload) => {
      const { id } = payload as { id: string }
      handled.set(id, (handled.get(id) ?? 0) + 1)
      return { id }
    })
    return handled
  }

  const check = async (t: ReturnType<typeof traffic>, handled: Map<string, number>) => {
    assert.deepEqual(
      t.calls.filter((c) => c.wrong !== undefined),
      [],
      "nobody gets another call's reply",
    )
    // Retryable: the connection went (BUS_CONNECTION_LOST), a stopping node nacked (BUS_REFUSED),
    // or no reply in time; each an UnavailableError or TimeoutError, a 503 in the API.
    for (const c of t.calls.filter((c) => !c.ok))
      assert.ok(RETRYABLE.includes(c.code ?? ''), `a retryable error, not ${c.code}`)
    const slowest = Math.max(...t.calls.map((c) => c.ms))
    assert.ok(
      slowest <= CALL_TIMEOUT_MS + 2000,
      `no call outlives its timeout (slowest: ${slowest} ms)`,
    )
    await until(
      'every confirmed cast handled',
      () => t.confirmed.every((id) => handled.has(id)),
      10_000,
    )
    const twice = [...handled].filter(([, count]) => count > 1)
    assert.deepEqual(twice, [], 'no request handled twice')
  }

  void it("RPC keeps working while the node holding the work queue's leader stops and starts; queued work survives it", async () => {
    const topic = `cluster.${randomUUID()}`
    const queued = `cluster.${randomUUID()}`
    await Promise.all([declareOn(3, topic), declareOn(3, queued)])
    const [server, client] = await Promise.all([bus(true, 1, 2, 3), bus(true, 1, 2, 3)])
    // Work waiting in a queue led by node 3, with no server yet.
    const ids = Array.from({ length: 30 }, (_, i) => `w${i}`)
    await Promise.all(ids.map((id) => client.cast(queued, 'work', { id })))
    const before = await queues(1)
    assert.equal(before.get(topic)?.leader, nodeName(3))
    assert.equal(before.get(queued)?.leader, nodeName(3))
    const handled = await counting(server, topic)
    const t = traffic(client, topic)
    await t.progress('calls before the stop')
    await sh(['stop', dir, '3'])
    await t.progress("calls with the leader's node stopped")
    const moved = (await queues(1)).get(topic)?.leader
    assert.ok(moved === nodeName(1) || moved === nodeName(2), `a new leader (${moved})`)
    // The queued work is on the other members: a server on a surviving node gets all of it, once.
    const late = await counting(server, queued)
    await until('the queued work', () => ids.every((id) => late.has(id)), 30_000)
    assert.deepEqual(
      [...late].filter(([, c]) => c > 1),
      [],
      'queued work handled once',
    )
    await sh(['start', dir, '3'])
    await t.progress('calls after the node is back')
    await t.stop()
    await check(t, handled)
    assert.equal(server.status?.().state, 'up')
  })

  void it('the connected node stops and starts: the client moves to the next node; in-flight calls fail retryably', async () => {
    const topic = `cluster.${randomUUID()}`
    const [server, client] = await Promise.all([bus(true, 2, 3, 1), bus(true, 1, 2, 3)])
    const handled = await counting(server, topic)
    const t = traffic(client, topic)
    await t.progress('calls before the stop')
    await sh(['stop', dir, '1'])
    await t.progress('calls after the client reconnected')
    assert.match(
      client.status?.().detail ?? '',
      new RegExp(`connected to rabbit://guest:\\*\\*\\*@${node(2)}/`),
    )
    await sh(['start', dir, '1'])
    await t.progress('calls after the node is back')
    await t.stop()
    await check(t, handled)
  })
})
