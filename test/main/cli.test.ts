/**
 * The `cyborg` command as an operator runs it: bin/cyborg as a child process, in a temporary
 * working directory, with a temporary config file.
 */
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BIN } from '../support/cli.js'

const SAMPLE = fileURLToPath(new URL('../../etc/cyborg.conf.sample', import.meta.url))

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-cli-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

/** The parent's environment without any CYBORG_ setting that would change the child's config. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CYBORG_')) env[k] = v
  return { ...env, ...extra }
}

function start(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const child = spawn(BIN, args, {
    cwd: options.cwd ?? dir,
    env: cleanEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()))
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  return { child, exited, out: () => stdout, err: () => stderr }
}

async function run(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const p = start(args, options)
  const code = await p.exited
  return { code, stdout: p.out(), stderr: p.err() }
}

function conf(name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

void test('a bad config file: exit 1 and one line naming file, line, section, option, value and expected form', async () => {
  const file = conf('bad.conf', '[DEFAULT]\ndebug = false\n[api]\nport = abc\n')
  const r = await run(['--config-file', file, 'up'])
  assert.equal(r.code, 1)
  assert.equal(r.stderr, `${file}:4: [api] port = "abc": expected an integer 1-65535\n`)
  assert.equal(r.stdout, '')
})

void test('--config-file may follow the subcommand and repeat; later files and then env win', async () => {
  const a = conf('a.conf', '[api]\nport = 7001\nhost_ip = 10.1.1.1\n')
  const b = conf('b.conf', '[api]\nport = 7002\n')
  const r = await run(['config', 'show', '--config-file', a, '--config-file', b], {
    env: { CYBORG_API__HOST_IP: '10.2.2.2' },
  })
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`# from ${b}:2\nport = 7002\n`))
  assert.match(r.stdout, /# from CYBORG_API__HOST_IP\nhost_ip = 10\.2\.2\.2\n/)
})

void test('an unknown option and an unknown section are one-line errors', async () => {
  const file = conf('unknown.conf', '[agent]\nenabled_driver = fake\n')
  const r = await run(['--config-file', file, 'db', 'sync'])
  assert.equal(r.code, 1)
  assert.equal(
    r.stderr,
    `${file}:2: [agent] enabled_driver: unknown option; did you mean enabled_drivers?\n`,
  )
  const section = conf('section.conf', '[DEFAULT]\n\n[oslo_concurrency]\nlock_path = /tmp\n')
  const s = await run(['--config-file', section, 'up'])
  assert.equal(s.code, 1)
  assert.match(
    s.stderr,
    new RegExp(
      `^${section}:3: \\[oslo_concurrency\\]: unknown section; expected one of DEFAULT, api, .*\n$`,
    ),
  )
})

void test('separate api and conductor refuse to start without a shared bus', async () => {
  const file = conf('empty.conf', '')
  for (const command of ['api', 'conductor']) {
    const r = await run(['--config-file', file, command])
    assert.equal(r.code, 1, command)
    assert.match(
      r.stderr,
      /^built-in default: \[DEFAULT\] transport_url = "": separate api, conductor and agent processes need a shared message bus .*\n$/,
    )
  }
  // A transport URL the bus cannot use is a one-line ConfigError too, password masked, before any connection attempt.
  const rabbit = await run(['--config-file', file, 'up'], {
    env: { CYBORG_DEFAULT__TRANSPORT_URL: 'rabbit://guest:s3cret@127.0.0.1:99999/' },
  })
  assert.equal(rabbit.code, 1)
  assert.equal(
    rabbit.stderr,
    'CYBORG_DEFAULT__TRANSPORT_URL: [DEFAULT] transport_url = "rabbit://guest:***@127.0.0.1:99999/": port 99999 is not 1-65535\n',
  )
  assert.ok(!rabbit.stderr.includes('s3cret') && !rabbit.stdout.includes('s3cret'))
})

void test('db sync migrates a fresh SQLite file and says what it applied; a second run applies nothing', async () => {
  const db = join(dir, 'sync', 'nested', 'cyborg.sqlite')
  const file = conf('sync.conf', `[database]\nconnection = sqlite:///${db}\n`)
  const first = await run(['--config-file', file, 'db', 'sync'])
  assert.equal(first.code, 0, first.stderr)
  assert.match(first.stdout, /^applied 0001-initial$/m)
  assert.ok(existsSync(db))
  const second = await run(['--config-file', file, 'db', 'sync'])
  assert.equal(second.code, 0, second.stderr)
  assert.match(second.stdout, /nothing to apply/)
})

/** Starts `up`, waits for the fake device over HTTP, then stops it with `signal`. */
async function upThenStop(signal: NodeJS.Signals) {
  const port = await freePort()
  const work = mkdtempSync(join(dir, 'up-'))
  const file = conf('up.conf', '')
  const p = start(['--config-file', file, 'up'], {
    cwd: work,
    env: { CYBORG_API__PORT: String(port) },
  })
  let child: ChildProcess | undefined = p.child
  try {
    let devices: { hostname: string; vendor: string }[] = []
    for (let i = 0; i < 300 && devices.length === 0 && p.child.exitCode === null; i++) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/devices`)
        if (res.ok) devices = ((await res.json()) as { devices: typeof devices }).devices
      } catch {
        // not listening yet
      }
      if (devices.length === 0) await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(devices.length, 1, `no device listed; output:\n${p.out()}\n${p.err()}`)
    assert.ok(
      existsSync(join(work, '.cyborg', 'cyborg.sqlite')),
      'state dir and database created in the working directory',
    )

    const ready = p
      .out()
      .split('\n')
      .filter((l) => l.includes('cyborg is ready'))
    assert.equal(ready.length, 1)
    assert.equal(JSON.parse(ready[0] as string).url, `http://127.0.0.1:${port}`)

    p.child.kill(signal)
    const code = await p.exited
    child = undefined
    assert.equal(code, 0, p.err())
    assert.equal(p.err(), '')
    assert.match(p.out(), /"msg":"stopped"/)
  } finally {
    child?.kill('SIGKILL')
  }
}

void test('up serves the fake device, logs one ready line with the URL, and exits 0 on SIGTERM', () =>
  upThenStop('SIGTERM'))
void test('... and on SIGINT (Ctrl-C)', () => upThenStop('SIGINT'))

void test('config sample prints the shipped sample; version prints the version', async () => {
  const sample = await run(['config', 'sample'])
  assert.equal(sample.code, 0)
  assert.equal(sample.stdout, readFileSync(SAMPLE, 'utf8'))
  const version = await run(['version'])
  assert.match(version.stdout, /^cyborg \d+\.\d+\.\d+\n$/)
})
