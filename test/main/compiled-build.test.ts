/**
 * The compiled build (dist/, docs/build.md) with each package it loads lazily: the bundle gives a
 * CommonJS package imported with import() a default export only, which the sources under tsx do not
 * show. bin/cyborg opens PostgreSQL (pg), MariaDB (mysql2) and SQLite (better-sqlite3, outside the
 * bundle), and the conductor connects to RabbitMQ (amqplib).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { BIN, cyborg } from '../support/cli.js'
import { testDialects } from '../support/db.js'
import { testBroker } from '../support/peers/rabbitmq.js'

describe('the compiled build', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-compiled-'))
  })
  after(() => rm(dir, { recursive: true, force: true }))

  it('writes every chunk in ASCII, so that Node keeps its source as a one-byte string', async () => {
    // One non-ASCII character (a licence comment's) made the 1.1 MB http chunk a two-byte string in
    // the API's heap: the licence comments go beside the chunks (docs/build.md).
    const main = path.join(path.dirname(BIN), '../dist/main')
    const chunks = (await readdir(main)).filter((name) => name.endsWith('.js'))
    assert.ok(chunks.length > 0)
    for (const name of chunks) {
      const bytes = await readFile(path.join(main, name))
      assert.equal(
        bytes.findIndex((b) => b > 0x7f),
        -1,
        name,
      )
    }
  })

  it('opens every database dialect: db sync, then db version', async () => {
    for (const dialect of await testDialects()) {
      if (dialect.skip) continue
      const db = await dialect.create()
      try {
        const url = dialect.name === 'sqlite' ? `sqlite:///${dir}/compiled.sqlite` : db.url
        const env = { CYBORG_DATABASE__CONNECTION: url, CYBORG_DEFAULT__STATE_PATH: dir }
        const sync = await cyborg(['db', 'sync'], env)
        assert.equal(sync.code, 0, `${dialect.name}: ${sync.stderr}`)
        const version = await cyborg(['db', 'version'], env)
        assert.equal(version.code, 0, `${dialect.name}: ${version.stderr}`)
        assert.match(version.stdout, /\d{4}-/, dialect.name)
      } finally {
        await db.close()
      }
    }
  })

  it('connects the conductor to RabbitMQ, and stops on SIGTERM', async (t) => {
    const broker = await testBroker()
    if (broker.skip) return t.skip(broker.skip)
    const vhost = await broker.createVhost()
    let child: ReturnType<typeof spawn> | undefined
    try {
      child = spawn(BIN, ['conductor'], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/root',
          CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
          CYBORG_DEFAULT__STATE_PATH: dir,
          CYBORG_DATABASE__CONNECTION: `sqlite:///${dir}/conductor.sqlite`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
      const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve))
      const deadline = Date.now() + 60_000
      const settled = () => /cyborg conductor is ready|cannot connect to RabbitMQ/.test(out)
      while (!settled() && child.exitCode === null) {
        assert.ok(Date.now() < deadline, `not ready within 60 s:\n${out}`)
        await new Promise((r) => setTimeout(r, 50))
      }
      assert.doesNotMatch(out, /cannot connect to RabbitMQ/, out)
      child.kill('SIGTERM')
      assert.equal(await exited, 0, out)
    } finally {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await vhost.drop()
    }
  })
})
