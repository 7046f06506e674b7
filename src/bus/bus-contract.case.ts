/**
 * The MessageBus contract, shared by every implementation (hono's `common.case.test.ts` idea):
 * `runBusContract('rabbitmq', () => createRabbitMqBus(...))` runs the same checks. Every test uses
 * fresh topic names, so a shared broker is fine.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { MessageBus } from './bus.js'
import {
  AppError,
  ConflictError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'

/** Runs the contract against buses made by `createBus` (one per test, closed afterwards). */
export function runBusContract(name: string, createBus: () => Promise<MessageBus>): void {
  const topic = () => `contract.${randomUUID()}`
  const withBus = (fn: (bus: MessageBus) => Promise<void>) => async () => {
    const bus = await createBus()
    try {
      await fn(bus)
    } finally {
      await bus.close()
    }
  }

  void describe(`MessageBus contract: ${name}`, () => {
    void it(
      'call reaches a server and returns its result, both as JSON',
      withBus(async (bus) => {
        const t = topic()
        let seen: unknown
        await bus.serve(t, async (method, payload) => {
          seen = { method, payload }
          return { at: new Date(0), none: undefined, list: [1, 'two'] }
        })
        const result = await bus.call(t, 'echo', { at: new Date(0), n: 1 }, { timeoutMs: 2000 })
        assert.deepEqual(seen, {
          method: 'echo',
          payload: { at: '1970-01-01T00:00:00.000Z', n: 1 },
        })
        assert.deepEqual(result, { at: '1970-01-01T00:00:00.000Z', list: [1, 'two'] })
      }),
    )

    void it(
      'cast reaches one server and resolves without waiting for it',
      withBus(async (bus) => {
        const t = topic()
        const got = new Promise(
          (resolve) => void bus.serve(t, async (method, payload) => resolve({ method, payload })),
        )
        await bus.cast(t, 'poke', { n: 2 })
        assert.deepEqual(await got, { method: 'poke', payload: { n: 2 } })
      }),
    )

    void it(
      'errors cross as the same class, code and details',
      withBus(async (bus) => {
        const t = topic()
        await bus.serve(t, async (method) => {
          if (method === 'conflict')
            throw new ConflictError('name taken', { details: { field: 'name' } })
          if (method === 'custom')
            throw new NotFoundError('no device', { code: 'DEVICE_NOT_FOUND' })
          if (method === 'alien')
            throw Object.assign(new Error('odd'), { name: 'WeirdError', code: 'WEIRD' })
          throw new TypeError('bug')
        })
        await assert.rejects(bus.call(t, 'conflict', null), (err) => {
          assert.ok(err instanceof ConflictError)
          assert.equal(err.code, 'CONFLICT')
          assert.equal(err.message, 'name taken')
          assert.deepEqual(err.details, { field: 'name' })
          return true
        })
        await assert.rejects(
          bus.call(t, 'custom', null),
          (err) => err instanceof NotFoundError && err.code === 'DEVICE_NOT_FOUND',
        )
        await assert.rejects(bus.call(t, 'alien', null), (err) => {
          assert.equal((err as Error).constructor, AppError)
          assert.equal((err as AppError).code, 'WEIRD')
          return true
        })
        await assert.rejects(
          bus.call(t, 'bug', null),
          (err) => err instanceof AppError && err.code === 'INTERNAL_ERROR',
        )
      }),
    )

    void it(
      'a call nobody answers fails with TimeoutError',
      withBus(async (bus) => {
        const t = topic()
        await bus.serve(t, () => new Promise(() => {}))
        await assert.rejects(bus.call(t, 'hang', null, { timeoutMs: 50 }), TimeoutError)
        await assert.rejects(bus.call(topic(), 'nobody', null, { timeoutMs: 50 }), TimeoutError)
      }),
    )

    void it(
      'a call waits for a server that comes later',
      withBus(async (bus) => {
        const t = topic()
        const reply = bus.call(t, 'late', { n: 3 }, { timeoutMs: 2000 })
        await new Promise((r) => setTimeout(r, 30))
        await bus.serve(t, async (_m, payload) => payload)
        assert.deepEqual(await reply, { n: 3 })
      }),
    )

    void it(
      'an aborted call rejects with code ABORTED',
      withBus(async (bus) => {
        const t = topic()
        await bus.serve(t, () => new Promise(() => {}))
        const controller = new AbortController()
        const reply = bus.call(t, 'hang', null, { timeoutMs: 2000, signal: controller.signal })
        controller.abort()
        await assert.rejects(reply, (err) => err instanceof AppError && err.code === 'ABORTED')
      }),
    )

    void it(
      'competing servers of one topic both get work',
      withBus(async (bus) => {
        const t = topic()
        const counts = [0, 0]
        for (const i of [0, 1]) {
          await bus.serve(t, async (_m, payload) => {
            counts[i]! += 1
            await new Promise((r) => setTimeout(r, 10))
            return payload
          })
        }
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, n) => bus.call(t, 'work', n, { timeoutMs: 5000 })),
        )
        assert.deepEqual(results, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        assert.equal(counts[0]! + counts[1]!, 10)
        assert.ok(counts[0]! > 0 && counts[1]! > 0, `both servers worked: ${counts.join(', ')}`)
      }),
    )

    void it(
      'publish reaches every subscriber; unsubscribe stops delivery',
      withBus(async (bus) => {
        const t = topic()
        const a: unknown[] = []
        const b: unknown[] = []
        const subA = await bus.subscribe(t, (m) => void a.push(m))
        await bus.subscribe(t, (m) => void b.push(m))
        await bus.publish(t, { n: 1 })
        await until(() => a.length === 1 && b.length === 1)
        await subA.unsubscribe()
        await subA.unsubscribe() // idempotent
        await bus.publish(t, { n: 2 })
        await until(() => b.length === 2)
        await new Promise((r) => setTimeout(r, 30))
        assert.deepEqual(a, [{ n: 1 }])
        assert.deepEqual(b, [{ n: 1 }, { n: 2 }])
      }),
    )

    void it(
      'an unsubscribed server gets no more calls',
      withBus(async (bus) => {
        const t = topic()
        let served = 0
        const sub = await bus.serve(t, async () => ++served)
        assert.equal(await bus.call(t, 'x', null, { timeoutMs: 2000 }), 1)
        await sub.unsubscribe()
        await assert.rejects(bus.call(t, 'x', null, { timeoutMs: 50 }), TimeoutError)
        assert.equal(served, 1)
      }),
    )

    void it('close fails pending calls with UnavailableError, and later calls too', async () => {
      const bus = await createBus()
      const t = topic()
      await bus.serve(t, () => new Promise(() => {}))
      const reply = bus.call(t, 'hang', null, { timeoutMs: 5000 })
      await new Promise((r) => setTimeout(r, 20))
      await bus.close()
      await assert.rejects(reply, UnavailableError)
      await assert.rejects(bus.call(t, 'again', null, { timeoutMs: 50 }), UnavailableError)
      await bus.close() // idempotent
    })

    void it('status() is up once created and closed after close()', async () => {
      const bus = await createBus()
      assert.equal(bus.status?.().state, 'up')
      await bus.close()
      assert.equal(bus.status?.().state, 'closed')
    })
  })
}

async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}
