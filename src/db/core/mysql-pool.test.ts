/**
 * Which MariaDB client errors mean "this connection or host is unusable, try a new connection":
 * the host-level codes, Galera's 1047, and mysql2's fatal errors without a code (a command given to
 * a connection that had already died).
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isUnreachable } from './mysql-pool.js'

void describe('isUnreachable', () => {
  void it('accepts lost hosts, a node not ready and a command on a dead connection', () => {
    const closed = Object.assign(
      new Error("Can't add new command when connection is in closed state"),
      { fatal: true },
    )
    assert.equal(isUnreachable(closed), true)
    assert.equal(isUnreachable(Object.assign(new Error('x'), { code: 'ECONNRESET' })), true)
    assert.equal(isUnreachable(Object.assign(new Error('x'), { errno: 1047 })), true)
  })
  void it('refuses errors of the statement itself', () => {
    const dup = Object.assign(new Error('Duplicate entry'), { code: 'ER_DUP_ENTRY', errno: 1062 })
    assert.equal(isUnreachable(dup), false)
    const parse = Object.assign(new Error('bad packet'), { code: 'ER_PARSE_ERROR', fatal: true })
    assert.equal(isUnreachable(parse), false)
    assert.equal(isUnreachable(new Error('plain')), false)
    assert.equal(isUnreachable(undefined), false)
  })
})
