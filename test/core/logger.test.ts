/** A pino logger is a Logger as is: the port stays a structural subset of pino's. */
import { it } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import type { Logger } from '../../src/domain/logger.js'

void it('pino satisfies the Logger port', () => {
  const lines: string[] = []
  const sink = new Writable({
    write: (chunk: Buffer, _enc, done) => void (lines.push(chunk.toString()), done()),
  })
  const log: Logger = pino({ level: 'debug' }, sink)
  log.child({ component: 'agent' }).info({ host: 'h1' }, 'reported %s', 'x')
  log.warn('plain')
  const first = JSON.parse(lines[0]!) as Record<string, unknown>
  assert.equal(first.component, 'agent')
  assert.equal(first.host, 'h1')
  assert.equal(first.msg, 'reported x')
})
