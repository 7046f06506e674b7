/**
 * `cyborg db version | upgrade (sync) | downgrade | backup | check` as an operator runs them, on an
 * SQLite file: what they print and their exit codes (docs/operations.md). The behaviour
 * on three databases is in test/core/db-tooling.test.ts, migration-walk.test.ts, db-check.test.ts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/core/connection.js'
import { backupAdvice } from '../../src/main/commands/db-backup-advice.js'
import { runCommand } from '../support/service.js'

const ARQ = '0b5e0000-0000-4000-8000-000000000001'

void describe('cyborg db commands', () => {
  let dir: string
  let env: Record<string, string>
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-dbcmd-'))
    env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${dir}/cyborg.db` }
  })
  after(() => rm(dir, { recursive: true, force: true }))
  const db = (...args: string[]) => runCommand(['db', ...args], env)
  /** Writes into the file while no command runs (a Bound request with no handle). */
  const plant = async () => {
    const h = await openDatabase(`sqlite:///${dir}/cyborg.db`)
    const now = '2026-11-26T00:00:00.000000+00:00'
    await sql`insert into device_profiles (uuid, name, profile_json, created_at)
      values ('0b5e0000-0000-4000-8000-000000000002', 'p', '[]', ${now})`.execute(h.db)
    await sql`insert into accelerator_requests (uuid, state, device_profile_id, created_at)
      values (${ARQ}, 'Bound', (select id from device_profiles), ${now})`.execute(h.db)
    await h.close()
  }

  void it('version, upgrade --to, sync, downgrade, check on an old schema', async () => {
    // `db version` only reads: it creates no database (test/main/db-readonly.test.ts).
    writeFileSync(`${dir}/cyborg.db`, '')
    let r = await db('version')
    assert.equal(r.code, 0, r.output)
    assert.match(
      r.output,
      /^database: sqlite:\/\/\/.*\ncurrent: {2}base \(empty schema\)\npending: {2}0001-initial, /,
    )
    r = await db('upgrade', '--to', '3')
    assert.equal(r.code, 0, r.output)
    assert.equal(
      r.output.replaceAll(env.CYBORG_DATABASE__CONNECTION!, 'URL'),
      'applied 0001-initial\napplied 0002-placement\napplied 0003-arqs\nURL: 3 migration(s) applied; at 0003-arqs, 16 pending\n',
    )
    r = await db('version', '--format', 'json')
    assert.equal(r.code, 0, r.output)
    const v = JSON.parse(r.output) as Record<string, unknown>
    assert.equal(v.current, '0003-arqs')
    assert.equal(v.latest, '0019-events-resource-idx')
    assert.equal((v.pending as string[])[0], '0004-arq-instances')
    r = await db('sync')
    assert.equal(r.code, 0, r.output)
    assert.match(
      r.output,
      /applied 0019-events-resource-idx\n.*: 16 migration\(s\) applied; the schema is current\n$/,
    )
    assert.match((await db('sync')).output, /: nothing to apply; the schema is current\n$/)
    r = await db('downgrade', '--to', '0018-handle-mdev-uuid')
    assert.equal(r.code, 0, r.output)
    assert.match(
      r.output,
      /^undone 0019-events-resource-idx\n.*: 1 migration\(s\) undone; at 0018-handle-mdev-uuid\n$/,
    )
    r = await db('check')
    assert.equal(r.code, 1)
    assert.match(
      r.output,
      /^cyborg db check: db check needs the schema at 0019-events-resource-idx; it is at 0018-handle-mdev-uuid: run cyborg db upgrade first\n$/,
    )
    assert.equal((await db('upgrade')).code, 0)
  })

  void it('check: nothing, then a finding (table and json); downgrade refused until --force', async () => {
    let r = await db('check')
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, /^sqlite:\S+: 0 finding\(s\); Placement not configured, not checked\n$/)
    await plant()
    r = await db('check')
    assert.equal(r.code, 1, r.output)
    assert.match(
      r.output,
      new RegExp(
        `^bound_without_handle: accelerator request ${ARQ} is Bound but holds no attach ` +
          `handle\n.*: 1 finding\\(s\\) \\(1 bound_without_handle\\); Placement not configured, not ` +
          `checked\n$`,
      ),
    )
    r = await db('check', '--format', 'json')
    assert.equal(r.code, 1, r.output)
    const j = JSON.parse(r.output) as {
      findings: unknown[]
      summary: unknown
      placementChecked: boolean
    }
    assert.deepEqual(j.summary, { total: 1, byKind: { bound_without_handle: 1 } })
    assert.equal(j.placementChecked, false)
    assert.equal(j.findings.length, 1)

    r = await db('downgrade', '--to', 'base')
    assert.equal(r.code, 1)
    assert.equal(
      r.output,
      'cyborg db downgrade: cannot downgrade to base: 0001-initial: 1 device profile(s), 1 ' +
        'accelerator request(s). Pass --force to drop them (take a backup first)\n',
    )
    r = await db('downgrade', '--to', '0', '--force')
    assert.equal(r.code, 0, r.output)
    assert.match(
      r.output,
      /^dropped \(--force\): 0001-initial: 1 device profile\(s\), 1 accelerator request\(s\)\n/m,
    )
    assert.match(r.output, /: 19 migration\(s\) undone; at base\n$/)
    assert.equal((await db('upgrade')).code, 0)
  })

  void it('backup: a copy, never over an existing file; PostgreSQL and MariaDB get their dump command', async () => {
    const copy = path.join(dir, 'copy.db')
    let r = await db('backup', copy)
    assert.equal(r.code, 0, r.output)
    assert.ok(existsSync(copy))
    r = await db('backup', copy)
    assert.equal(r.code, 1)
    assert.equal(r.output, `cyborg db backup: ${copy} exists: remove it or name another file\n`)
    r = await runCommand(['db', 'backup', '/tmp/c.dump'], {
      CYBORG_DATABASE__CONNECTION: 'postgresql://cyborg:secret@127.0.0.1:1/cyborg',
    })
    assert.equal(r.code, 1)
    assert.equal(
      r.output,
      'cyborg db backup: db backup copies SQLite databases; this one is PostgreSQL. Dump it with pg_dump:\n' +
        '  pg_dump --format=custom --host=127.0.0.1 --port=1 --username=cyborg --file=/tmp/c.dump cyborg\n' +
        'and restore it with: pg_restore --clean --if-exists --host=127.0.0.1 --port=1 --username=cyborg --dbname=cyborg /tmp/c.dump\n',
    )
    assert.equal(
      backupAdvice('mysql+pymysql://cyborg:s@db.example/cyborg', "/b/it's.sql"),
      'db backup copies SQLite databases; this one is MariaDB. Dump it with mariadb-dump:\n' +
        `  mariadb-dump --single-transaction --routines --host=db.example --port=3306 --user=cyborg --result-file='/b/it'\\''s.sql' cyborg\n` +
        `and restore it with: mariadb --host=db.example --port=3306 --user=cyborg cyborg < '/b/it'\\''s.sql'`,
    )
  })

  void it('names what is wrong: an unknown revision, a missing --to', async () => {
    let r = await db('downgrade', '--to', '99')
    assert.equal(r.code, 1)
    assert.match(
      r.output,
      /^cyborg db downgrade: unknown revision "99": expected base, a number, or one of 0001-initial, /,
    )
    r = await db('downgrade')
    assert.notEqual(r.code, 0)
    assert.match(r.output, /required option '--to <rev>' not specified/)
  })
})
