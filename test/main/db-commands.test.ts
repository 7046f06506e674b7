/**
 * `cyborg db version | upgrade | downgrade | backup | check` as an operator runs them, on an
 * SQLite file: what they print and their exit codes (the behaviour on three databases is in
 * test/core/db-tooling.test.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { runCommand } from '../support/service.js'

void describe('cyborg db commands', () => {
  let dir: string
  let env: Record<string, string>
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-dbcmd-'))
    env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${dir}/cyborg.db` }
  })
  after(() => rm(dir, { recursive: true, force: true }))
  const db = (...args: string[]) => runCommand(['db', ...args], env)

  void it('upgrade to a revision, version, upgrade the rest, downgrade, check, backup', async () => {
    let r = await db('upgrade', '--to', '3')
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, /applied 0001-initial\napplied 0002-placement\napplied 0003-arqs\n/)
    r = await db('version')
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, /: at 0003-arqs\npending: 0004-arq-instances, /)
    r = await db('upgrade')
    assert.equal(r.code, 0, r.output)
    assert.match((await db('version')).output, /pending: none/)
    r = await db('downgrade', '--to', '0014-handle-cleaning')
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, /undone 0015-reconfig-fence\n.*1 migration\(s\) undone/)
    assert.equal((await db('upgrade')).code, 0)
    r = await db('check')
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, /0 finding\(s\)/)
    r = await db('backup', path.join(dir, 'copy.db'))
    assert.equal(r.code, 0, r.output)
    assert.ok(existsSync(path.join(dir, 'copy.db')))
  })

  void it('names what is wrong: an unknown revision, a missing --to', async () => {
    let r = await db('downgrade', '--to', '99')
    assert.equal(r.code, 1)
    assert.match(r.output, /cyborg db downgrade: unknown revision "99"/)
    r = await db('downgrade')
    assert.notEqual(r.code, 0)
    assert.match(r.output, /required option '--to <rev>' not specified/)
  })
})
