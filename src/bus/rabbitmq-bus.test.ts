/**
 * RabbitMqBus: the shared contract, then what only a broker can show (several connections, lost
 * connections, refused reconnections). Each run gets a fresh vhost, dropped at the end.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { MessageBus } from './bus.js'
import { runBusContract } from './bus-contract.case.js'
import { createRabbitMqBus, type RabbitMqBusOptions } from './rabbitmq-bus.js'
import { describeBroker, parseTransportUrl } from './transport-url.js'
import { testBroker, type TestVhost } from '../../test/support/peers/rabbitmq.js'
import {
  AppError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'

const broker = await testBroker()

if (broker.skip !== undefined) {
  void it('RabbitMqBus (contract and broker tests)', { skip: broker.skip }, () => {})
} else {
  let vhost: TestVhost
  const buses: MessageBus[] = []
  before(async () => {
    vhost = await broker.createVhost()
  })
  after(async () => {
    await Promise.all(buses.map((b) => b.close()))
    await vhost?.drop()
  })

  /** A bus on the test vhost with quick reconnects; closed after the file. */
  const bus = async (options: Partial<RabbitMqBusOptions> = {}) => {
    const b = await createRabbitMqBus({
      url: vhost.url,
      drainTimeoutMs: 100,
      reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
      ...options,
    })
    buses.push(b)
    return b
  }

  runBusContract('rabbitmq', () =>
    createRabbitMqBus({
      url: vhost.url,
      drainTimeoutMs: 100,
      reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
    }),
  )

  const topic = () => `rmq.${randomUUID()}`

  void describe('RabbitMqBus', () => {
    void it('servers on two connections share one topic; errors cross as the same class and code', async () => {
      const [a, b, client] = await Promise.all([bus(), bus(), bus()])
      const t = topic()
      const counts = { a: 0, b: 0 }
      for (const [name, server] of [
        ['a', a],
        ['b', b],
      ] as const) {
        await server.serve(t, async (method, payload) => {
          counts[name] += 1
          await sleep(5)
          if (method === 'conflict')
            throw new ConflictError('name taken', { details: { field: 'name' } })
          if (method === 'missing')
            throw new NotFoundError('no device', { code: 'DEVICE_NOT_FOUND' })
          return payload
        })
      }
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, n) => client.call(t, 'work', n, { timeoutMs: 5000 })),
      )
      assert.deepEqual(
        results,
        Array.from({ length: 20 }, (_, n) => n),
      )
      assert.ok(counts.a > 0 && counts.b > 0, `both servers worked: ${counts.a}, ${counts.b}`)
      await assert.rejects(client.call(t, 'conflict', null), (err) => {
        assert.ok(err instanceof ConflictError)
        assert.equal(err.code, 'CONFLICT')
        assert.deepEqual(err.details, { field: 'name' })
        return true
      })
      await assert.rejects(
        client.call(t, 'missing', null),
        (err) => err instanceof NotFoundError && err.code === 'DEVICE_NOT_FOUND',
      )
    })

    void it('a cast waits in the queue for a server; a publish nobody hears is not stored', async () => {
      const b = await bus()
      const t = topic()
      await b.cast(t, 'early', { n: 1 })
      await b.publish(t, { lost: true })
      const heard: unknown[] = []
      await b.subscribe(t, (m) => void heard.push(m))
      const got = new Promise(
        (resolve) => void b.serve(t, async (method, payload) => resolve({ method, payload })),
      )
      assert.deepEqual(await got, { method: 'early', payload: { n: 1 } })
      await b.publish(t, { n: 2 })
      await until(() => heard.length === 1)
      assert.deepEqual(heard, [{ n: 2 }])
    })

    void it('a reply to a caller that went away is dropped; the server keeps serving', async () => {
      const lines: string[] = []
      const [server, leaving, staying] = await Promise.all([
        bus({ log: capture(lines) }),
        createRabbitMqBus({ url: vhost.url }),
        bus(),
      ])
      const t = topic()
      await server.serve(t, async (method) => {
        if (method === 'slow') await sleep(150)
        return method
      })
      const orphan = leaving.call(t, 'slow', null, { timeoutMs: 5000 })
      await sleep(30)
      await leaving.close()
      await assert.rejects(orphan, UnavailableError)
      await sleep(200)
      assert.equal(await staying.call(t, 'fast', null, { timeoutMs: 2000 }), 'fast')
      assert.deepEqual(
        lines.filter((l) => !l.startsWith('debug') && !l.includes('connected to RabbitMQ')),
        [],
      )
    })

    void it('after the broker drops every connection, servers and subscribers come back by themselves', async () => {
      const lines: string[] = []
      let reconnects = 0
      const [server, client] = await Promise.all([
        bus({ log: capture(lines) }),
        bus({ log: capture(lines), onReconnect: () => void reconnects++ }),
      ])
      const t = topic()
      const heard: unknown[] = []
      await server.serve(t, async (method, payload) =>
        method === 'hang' ? new Promise(() => {}) : payload,
      )
      await server.subscribe(t, (m) => void heard.push(m))
      assert.equal(await client.call(t, 'echo', 1, { timeoutMs: 2000 }), 1)

      // Refuse reconnections for a while, so that the outage is long enough to call into.
      const inFlight = assert.rejects(
        client.call(t, 'hang', null, { timeoutMs: 10_000 }),
        (err) => err instanceof UnavailableError && err.code === 'BUS_CONNECTION_LOST',
      )
      await sleep(50)
      await vhost.setAccess(false)
      await vhost.closeConnections()
      await inFlight
      await until(() => lines.some((l) => l.includes('lost the connection to RabbitMQ')))
      const down = client.status?.()
      assert.equal(down?.state, 'connecting')
      assert.match(down?.detail ?? '', /^connection lost \d+ s ago \(.+\); reconnecting$/)
      const duringOutage = client.call(t, 'echo', 2, { timeoutMs: 10_000 })
      await sleep(300)
      await vhost.setAccess(true)
      assert.equal(await duringOutage, 2)

      // The subscriber is declared again too (publishes are never stored, so repeat until heard).
      await until(async () => {
        await client.publish(t, { n: heard.length })
        return heard.length > 0
      }, 5000)
      assert.ok(lines.some((l) => l.includes('connected to RabbitMQ')))
      assert.equal(reconnects, 1, 'one reconnection told (cyborg_bus_reconnects_total)')
      assert.deepEqual(client.status?.(), {
        state: 'up',
        detail: `connected to ${describeBroker(parseTransportUrl(vhost.url)[0]!)}`,
      })
    })

    void it('a topic queue deleted by an operator is declared again by its server and its callers', async () => {
      const lines: string[] = []
      const [server, client] = await Promise.all([bus({ log: capture(lines) }), bus()])
      const t = topic()
      await assert.rejects(client.call(t, 'nobody', null, { timeoutMs: 50 }), TimeoutError)
      await vhost.deleteQueue(t)
      // The client still believes the queue exists: its request comes back unroutable, and it
      // declares the queue again and re-sends, so the request waits there for a server.
      const waiting = client.call(t, 'echo', 1, { timeoutMs: 5000 })
      await sleep(100)
      await server.serve(t, async (_m, payload) => payload)
      assert.equal(await waiting, 1)

      await vhost.deleteQueue(t)
      await until(() => lines.some((l) => l.includes(`cancelled the consumer of ${t}`)))
      assert.equal(await client.call(t, 'echo', 2, { timeoutMs: 5000 }), 2)
    })

    void it('quorumQueues: topic queues are quorum queues; a server of the other type refuses, naming the fix; callers send anyway', async () => {
      const lines: string[] = []
      const [quorum, classic] = await Promise.all([
        bus({ quorumQueues: true }),
        bus({ log: capture(lines) }),
      ])
      const [q, c] = [topic(), topic()]
      await quorum.serve(q, async (_m, payload) => payload)
      await classic.serve(c, async (_m, payload) => payload)
      // RabbitMQ refuses the classic declaration of the quorum queue (and the other way round).
      for (const [b, t, have] of [
        [classic, q, 'quorum'],
        [quorum, c, 'classic'],
      ] as const) {
        await assert.rejects(
          b.serve(t, async () => null),
          (err) => {
            assert.ok(err instanceof UnavailableError)
            assert.equal(err.code, 'BUS_DECLARE_FAILED')
            assert.match(err.message, new RegExp(`the queue ${t} exists as a ${have} queue, but`))
            assert.match(err.message, /rabbit_quorum_queue = (true|false) asks for a/)
            assert.match(err.message, /rabbitmqctl delete_queue/)
            return true
          },
        )
      }
      // A caller needs only the queue: it sends to the one there, with a warning.
      assert.equal(await classic.call(q, 'echo', 1, { timeoutMs: 5000 }), 1)
      assert.equal(await quorum.call(c, 'echo', 2, { timeoutMs: 5000 }), 2)
      assert.ok(lines.some((l) => l.includes(`the queue ${q} exists as a quorum queue; sending`)))
    })

    void it('reconnects starting from the broker after the one it lost (round-robin over the transport_url)', async () => {
      // Two names of one broker: the status says which the connection went to.
      const [b0] = parseTransportUrl(vhost.url)
      const other = { ...b0!, hostname: 'localhost' }
      const url = vhost.url.replace(
        `@${b0!.hostname}:${b0!.port}/`,
        `@${b0!.hostname}:${b0!.port},guest:guest@localhost:${b0!.port}/`,
      )
      assert.notEqual(url, vhost.url)
      const b = await bus({ url })
      const connectedTo = (broker: typeof other) =>
        b.status?.().detail === `connected to ${describeBroker(broker)}`
      assert.ok(connectedTo(b0!), b.status?.().detail)
      await vhost.closeConnections()
      await until(() => connectedTo(other), 30_000)
      await vhost.closeConnections()
      await until(() => connectedTo(b0!), 30_000)
    })

    void it('an unreachable broker is retried and logged with the password masked, until aborted', async () => {
      const lines: string[] = []
      const controller = new AbortController()
      const connecting = createRabbitMqBus({
        url: 'rabbit://cyborg:s3cret@127.0.0.1:1/',
        log: capture(lines),
        reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
        signal: controller.signal,
      })
      await until(() => lines.filter((l) => l.includes('retrying')).length >= 2)
      controller.abort()
      await assert.rejects(
        connecting,
        (err) => err instanceof UnavailableError && err.code === 'BUS_CONNECT_ABORTED',
      )
      assert.ok(
        lines.some((l) => l.includes('rabbit://cyborg:***@127.0.0.1:1/')),
        lines.join('\n'),
      )
      assert.ok(lines.every((l) => !l.includes('s3cret')))
    })

    void it('a malformed URL fails at once, without the password', async () => {
      await assert.rejects(createRabbitMqBus({ url: 'rabbit://u:s3cret@h:99999/' }), (err) => {
        assert.ok(err instanceof InvalidInputError)
        assert.equal(err.code, 'TRANSPORT_URL_INVALID')
        assert.ok(!err.message.includes('s3cret'), err.message)
        return true
      })
    })

    void it('a payload that is not JSON-serialisable is refused before it is sent', async () => {
      const b = await bus()
      const t = topic()
      let served = 0
      await b.serve(t, async () => ++served)
      await assert.rejects(
        b.call(t, 'x', 10n as unknown),
        (err) => err instanceof AppError && err.code === 'BUS_ENCODING',
      )
      assert.equal(await b.call(t, 'x', null, { timeoutMs: 2000 }), 1)
    })
  })
}

function capture(lines: string[]): Logger {
  const write =
    (level: string) =>
    (...args: unknown[]) =>
      void lines.push(
        `${level} ${args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}`,
      )
  const log: Logger = {
    error: write('error'),
    warn: write('warn'),
    info: write('info'),
    debug: write('debug'),
    child: () => log,
  }
  return log
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}
