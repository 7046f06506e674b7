import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, type Config } from '../config/config.js'
import { ConfigError } from '../domain/errors.js'
import { checkLogFile, journalPriority, LogOutput, logTarget } from './log-output.js'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-log-output-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

function config(env: Record<string, string>): Config {
  return loadConfig({ files: [], env, hostname: 'h', cwd: '/srv' })
}

/** A stand-in for stdout that keeps what it got. */
function memory() {
  const lines: string[] = []
  return { lines, write: (s: string) => void lines.push(s) }
}

const line = (level: number, msg: string) => `{"level":${level},"msg":"${msg}"}\n`

void test("the file follows oslo.log's rules: log_file under log_dir, log_dir alone names it after the command", () => {
  assert.deepEqual(logTarget(config({}), 'api', '/srv'), {
    file: undefined,
    journal: false,
    stdout: true,
  })
  assert.equal(
    logTarget(config({ CYBORG_DEFAULT__LOG_FILE: 'x.log' }), 'api', '/srv').file,
    '/srv/x.log',
  )
  assert.equal(
    logTarget(
      config({ CYBORG_DEFAULT__LOG_FILE: 'x.log', CYBORG_DEFAULT__LOG_DIR: '/var/log/cyborg' }),
      'api',
    ).file,
    '/var/log/cyborg/x.log',
  )
  assert.equal(
    logTarget(
      config({ CYBORG_DEFAULT__LOG_FILE: '/abs/x.log', CYBORG_DEFAULT__LOG_DIR: '/var/log/c' }),
      'api',
    ).file,
    '/abs/x.log',
  )
  const conductor = logTarget(config({ CYBORG_DEFAULT__LOG_DIR: '/var/log/cyborg' }), 'conductor')
  assert.deepEqual(conductor, {
    file: '/var/log/cyborg/cyborg-conductor.log',
    journal: false,
    stdout: false,
  })
  // use_journal keeps standard output on, beside a file.
  const both = logTarget(
    config({ CYBORG_DEFAULT__LOG_DIR: '/l', CYBORG_DEFAULT__USE_JOURNAL: 'true' }),
    'agent',
  )
  assert.deepEqual(both, { file: '/l/cyborg-agent.log', journal: true, stdout: true })
})

void test("journald priorities: pino's levels to syslog's", () => {
  assert.deepEqual(
    [60, 50, 40, 30, 20, 10].map((l) => journalPriority(line(l, 'x'))),
    [2, 3, 4, 6, 7, 7],
  )
  assert.equal(journalPriority('not json'), 6)
})

void test('use_journal prefixes every stdout line with its priority; the JSON stays as it is', () => {
  const out = memory()
  const o = new LogOutput({ file: undefined, journal: true, stdout: true }, { stdout: out })
  o.write(line(50, 'bad'))
  o.write(line(30, 'fine'))
  assert.deepEqual(out.lines, ['<3>{"level":50,"msg":"bad"}\n', '<6>{"level":30,"msg":"fine"}\n'])
  o.apply({ file: undefined, journal: false, stdout: true })
  o.write(line(40, 'plain'))
  assert.equal(out.lines.at(-1), '{"level":40,"msg":"plain"}\n')
})

void test('a renamed log file is reopened by name (logrotate without copytruncate)', async () => {
  const file = join(dir, 'cyborg-api.log')
  const out = memory()
  const target = { file, journal: false, stdout: false }
  const o = new LogOutput(target, { stdout: out })
  o.write(line(30, 'before'))
  await new Promise((r) => setTimeout(r, 50))
  renameSync(file, `${file}.1`)
  o.write(line(30, 'after rename, before reopen'))
  o.apply(target)
  o.write(line(30, 'after reopen'))
  await o.close()
  const rotated = readFileSync(`${file}.1`, 'utf8')
  const fresh = readFileSync(file, 'utf8')
  assert.match(rotated, /"before"/)
  assert.match(fresh, /"after reopen"/)
  assert.doesNotMatch(fresh, /"before"/)
  // Every line went to exactly one of them, none to stdout.
  assert.equal((rotated + fresh).split('\n').filter(Boolean).length, 3)
  assert.deepEqual(out.lines, [])
})

void test('another file: the new one gets the lines from then on, the old one is closed', async () => {
  const a = join(dir, 'a.log')
  const b = join(dir, 'b.log')
  const o = new LogOutput({ file: a, journal: false, stdout: false }, { stdout: memory() })
  o.write(line(30, 'one'))
  o.apply({ file: b, journal: false, stdout: false })
  o.write(line(30, 'two'))
  await o.close()
  await new Promise((r) => setTimeout(r, 50))
  assert.match(readFileSync(a, 'utf8'), /"one"/)
  assert.doesNotMatch(readFileSync(a, 'utf8'), /"two"/)
  assert.match(readFileSync(b, 'utf8'), /"two"/)
})

void test('a log file that cannot be opened is a config error naming the option', () => {
  const c = config({ CYBORG_DEFAULT__LOG_DIR: join(dir, 'no', 'such', 'dir') })
  assert.throws(
    () => checkLogFile(c, logTarget(c, 'api')),
    (err: unknown) =>
      err instanceof ConfigError &&
      /CYBORG_DEFAULT__LOG_DIR: \[DEFAULT\] log_dir = .*cannot open .*cyborg-api\.log for appending: ENOENT/.test(
        err.message,
      ),
  )
})
