/**
 * The commands that only read the database (`custody verify`, `db version`, `db check`,
 * `db backup`, `db import-openstack --dry-run`) as an operator runs them: they open it read-only,
 * create nothing on disk (no SQLite file, no directory, no table), and name the real problem (no
 * such file, no schema, a bad `--from`) in one line that says what to do.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/core/connection.js'
import { downgradeTo } from '../../src/db/core/migrate.js'
import { testDialects } from '../support/db.js'
import { BIN } from '../support/cli.js'

/** Runs `cyborg <args>` in `cwd` with only PATH, HOME and `env`. */
function cyborgIn(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(BIN, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })))
}

/** Every file and directory under `dir`, with its size. */
const listing = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((f) => `${f} ${statSync(path.join(dir, f)).size}`)

const READERS: [string, string[]][] = [
  ['custody verify', ['custody', 'verify']],
  ['db version', ['db', 'version']],
  ['db check', ['db', 'check']],
  ['db backup', ['db', 'backup', '/tmp/cyborg-readonly-never.db']],
  [
    'db import-openstack',
    ['db', 'import-openstack', '--from', 'mysql+pymysql://u:p@127.0.0.1:1/cyborg', '--dry-run'],
  ],
]

void describe('read-only commands write nothing', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-readonly-'))
  })
  after(() => rm(dir, { recursive: true, force: true }))

  for (const [name, args] of READERS) {
    void it(`${name} on a missing SQLite file: names it, creates neither it nor its directory`, async () => {
      const file = path.join(dir, 'nonexistent', 'dir', 'x.sqlite')
      const r = await cyborgIn(dir, args, { CYBORG_DATABASE__CONNECTION: `sqlite:///${file}` })
      assert.equal(r.code, 1, r.stdout + r.stderr)
      assert.match(r.stderr, /^[^\n]+\n$/, 'one line')
      assert.ok(r.stderr.includes(`${file} does not exist`), r.stderr)
      assert.match(r.stderr, /cyborg db upgrade/)
      assert.equal(existsSync(path.join(dir, 'nonexistent')), false, 'a directory was created')
    })
  }

  void it('db import-openstack --dry-run with a bad --from names --from and opens nothing', async () => {
    const cwd = await mkdtemp(path.join(dir, 'cwd-'))
    const r = await cyborgIn(cwd, ['db', 'import-openstack', '--from', 'not a url', '--dry-run'])
    assert.equal(r.code, 1, r.stdout + r.stderr)
    assert.match(
      r.stderr,
      /^cyborg db import-openstack: --from "not a url" is not a database URL: /,
    )
    assert.match(r.stderr, /^[^\n]+\n$/, 'one line')
    assert.deepEqual(listing(cwd), [], 'something was created in the working directory')
  })

  void it('an empty SQLite file: "no Cyborg schema, run cyborg db upgrade"; the file stays empty', async () => {
    const file = path.join(dir, 'empty.sqlite')
    writeFileSync(file, '')
    const env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${file}` }
    for (const args of [
      ['custody', 'verify'],
      ['db', 'check'],
    ]) {
      const r = await cyborgIn(dir, args, env)
      assert.equal(r.code, 1, r.stdout + r.stderr)
      assert.match(r.stderr, /^[^\n]+\n$/, 'one line')
      assert.match(r.stderr, /holds no Cyborg schema.*run cyborg db upgrade/, r.stderr)
    }
    const r = await cyborgIn(dir, ['db', 'version'], env)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /current: {2}base \(empty schema\)/)
    assert.deepEqual(
      listing(dir).filter((f) => f.startsWith('empty')),
      ['empty.sqlite 0'],
    )
  })

  void it('a current SQLite database: the readers answer and change no file', async () => {
    const file = path.join(dir, 'current.sqlite')
    const env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${file}` }
    assert.equal((await cyborgIn(dir, ['db', 'upgrade'], env)).code, 0)
    const before = listing(dir)
    const mtime = statSync(file).mtimeMs
    for (const args of [
      ['custody', 'verify'],
      ['db', 'version'],
      ['db', 'check'],
    ]) {
      const r = await cyborgIn(dir, args, env)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    }
    // SQLite's own -wal and -shm of a WAL database may appear: a reader needs them, and only a
    // writer removes them when it closes (https://sqlite.org/wal.html#readonly).
    const companions = /\.sqlite-(wal|shm) /
    assert.deepEqual(
      listing(dir).filter((f) => !companions.test(f)),
      before.filter((f) => !companions.test(f)),
    )
    assert.equal(statSync(file).mtimeMs, mtime)
  })

  for (const dialect of ['postgres', 'mysql'] as const) {
    void it(`${dialect}: a database without the schema is named as such, and no table is created`, async (t) => {
      const d = (await testDialects()).find((x) => x.name === dialect)!
      if (d.skip) return t.skip(d.skip)
      const handle = await d.create()
      try {
        await downgradeTo(handle, 'base', { force: true })
        const tables = async () =>
          (await handle.db.introspection.getTables()).map((x) => x.name).sort()
        const had = await tables()
        const env = { CYBORG_DATABASE__CONNECTION: handle.url }
        for (const args of [
          ['custody', 'verify'],
          ['db', 'check'],
        ]) {
          const r = await cyborgIn(dir, args, env)
          assert.equal(r.code, 1, r.stdout + r.stderr)
          assert.match(r.stderr, /holds no Cyborg schema.*run cyborg db upgrade/, r.stderr)
        }
        assert.deepEqual(await tables(), had)
        // Read-only for real: the connection refuses DDL.
        const reader = await openDatabase(handle.url, { readOnly: true })
        try {
          await assert.rejects(sql`create table readonly_probe (id int)`.execute(reader.db))
        } finally {
          await reader.close()
        }
        assert.deepEqual(await tables(), had)
      } finally {
        await handle.close()
      }
    })
  }
})
