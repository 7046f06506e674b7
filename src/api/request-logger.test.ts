import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino, { type Logger } from 'pino'
import { deferredChildLogger } from './request-logger.js'

function capture(level: string): {
  log: Logger
  lines: Record<string, unknown>[]
  children: () => number
} {
  const lines: Record<string, unknown>[] = []
  let made = 0
  const log = pino(
    { level, base: { service: 'test' }, onChild: () => void made++ },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  )
  return { log, lines, children: () => made }
}

const make = (log: Logger, bindings: Record<string, unknown>, opts: Record<string, unknown> = {}) =>
  deferredChildLogger.call(undefined as never, log, bindings, opts, undefined as never) as Logger

void describe('the deferred per-request logger', () => {
  void it('makes no child while nothing is logged, nor for a disabled level', () => {
    const { log, lines, children } = capture('warn')
    const l = make(log, { request_id: 'req-1' })
    l.info('hidden')
    l.debug({ a: 1 }, 'hidden')
    assert.equal(children(), 0)
    assert.deepEqual(lines, [])
  })

  void it('logs exactly what the real child logs', () => {
    const deferred = capture('info')
    const real = capture('info')
    const err = new Error('boom')
    for (const l of [
      make(deferred.log, { request_id: 'req-2' }),
      real.log.child({ request_id: 'req-2' }),
    ]) {
      l.info({ status: 404 }, 'not found')
      l.error({ err, status: 500 }, 'request failed')
      l.debug('hidden')
    }
    const strip = (lines: Record<string, unknown>[]) =>
      lines.map((x) => ({ ...x, time: undefined }))
    assert.equal(deferred.lines.length, 2)
    assert.deepEqual(strip(deferred.lines), strip(real.lines))
    assert.equal(deferred.lines[0]!.request_id, 'req-2')
    assert.match(String((deferred.lines[1]!.err as { stack: string }).stack), /boom/)
  })

  void it('forwards everything else to the child: level, bindings(), grandchildren', () => {
    const { log, lines } = capture('info')
    const l = make(log, { request_id: 'req-3' })
    assert.equal(l.level, 'info')
    assert.equal(l.isLevelEnabled('debug'), false)
    assert.deepEqual(l.bindings(), log.child({ request_id: 'req-3' }).bindings())
    l.level = 'debug'
    l.debug('now visible')
    assert.equal(log.level, 'info', 'the parent keeps its level')
    l.child({ step: 'x' }).info('grandchild')
    assert.deepEqual(
      lines.map((x) => [x.msg, x.request_id, x.step]),
      [
        ['now visible', 'req-3', undefined],
        ['grandchild', 'req-3', 'x'],
      ],
    )
  })

  void it('makes the child at once when given child options', () => {
    const { log, children } = capture('info')
    const l = make(log, { request_id: 'req-4' }, { level: 'debug' })
    assert.equal(children(), 1)
    assert.equal(l.level, 'debug')
  })
})
