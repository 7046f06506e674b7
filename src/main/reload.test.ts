import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { loadConfig, type Config } from '../config/config.js'
import { createLogger } from './logger.js'
import { createReloader, type ReloadStep } from './reload.js'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-reload-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

/** A config file, the configuration loaded from it, and a logger whose lines the test reads. */
function setup(name: string, text: string) {
  const file = join(dir, name)
  writeFileSync(file, text)
  const load = (files: readonly string[]) => loadConfig({ files, env: {}, hostname: 'h', cwd: dir })
  const config = load([file])
  const lines: Record<string, unknown>[] = []
  const log = createLogger(config, {
    service: 'api',
    env: {},
    destination: {
      write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>),
    },
  })
  const messages = (level?: number) =>
    lines.filter((l) => level === undefined || l.level === level).map((l) => String(l.msg))
  return { file, config, log, lines, messages, load }
}

/** A step that records the configurations it was given. */
function recordingStep(name = 'test'): ReloadStep & { seen: Config[] } {
  const seen: Config[] = []
  return { name, seen, apply: (next) => void seen.push(next) }
}

void test('a mutable option is applied and logged as oslo.config does', async () => {
  const s = setup('a.conf', '[webhooks]\nconcurrency = 8\n')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  const step = recordingStep()
  r.add(step)
  writeFileSync(s.file, '[webhooks]\nconcurrency = 16\n[DEFAULT]\ndebug = true\n')
  const outcome = await r.reload()
  assert.deepEqual(outcome, {
    loaded: true,
    applied: ['[DEFAULT] debug', '[webhooks] concurrency'],
    needsRestart: [],
    failedSteps: [],
  })
  assert.equal(step.seen.length, 1)
  assert.equal(step.seen[0]!.webhooks.concurrency, 16)
  assert.ok(s.messages(30).includes('Option [webhooks] concurrency changed from [8] to [16]'))
  assert.ok(s.messages(30).includes('configuration reloaded'))
})

void test('an immutable option that changed is logged as needing a restart, at every reload', async () => {
  const s = setup('b.conf', '[api]\nport = 6666\n')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  writeFileSync(s.file, '[api]\nport = 7777\n')
  const first = await r.reload()
  assert.deepEqual(first.needsRestart, ['[api] port'])
  assert.deepEqual(first.applied, [])
  const again = await r.reload()
  assert.deepEqual(again.needsRestart, ['[api] port'])
  const warnings = s.messages(40)
  assert.equal(warnings.length, 2)
  assert.match(
    warnings[0]!,
    /^Ignoring change to immutable option \[api\] port \(.*b\.conf:2\): it needs a restart/,
  )
})

void test('a file that does not load changes nothing, says where, and the steps still run', async () => {
  const s = setup('c.conf', '[DEFAULT]\ndebug = false\n')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  const step = recordingStep('logging')
  r.add(step)
  writeFileSync(s.file, '[DEFAULT]\ndebug = true\n\n[webhooks]\nconcurrency = lots\n')
  const outcome = await r.reload()
  assert.equal(outcome.loaded, false)
  assert.deepEqual(outcome.applied, [])
  // The steps got the running configuration: the log file is reopened all the same.
  assert.equal(step.seen.length, 1)
  assert.equal(step.seen[0], s.config)
  const [error] = s.messages(50)
  assert.match(error!, /c\.conf:5: \[webhooks\] concurrency = "lots": expected an integer/)
  assert.match(error!, /keeping the running configuration$/)
  // Fixed: the next reload applies what changed since the running configuration.
  writeFileSync(s.file, '[DEFAULT]\ndebug = true\n')
  assert.deepEqual((await r.reload()).applied, ['[DEFAULT] debug'])
})

void test('a failing step keeps its settings and the others still apply theirs', async () => {
  const s = setup('d.conf', '')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  const later = recordingStep('later')
  r.add({
    name: 'policy',
    apply: () => {
      throw new Error('policy.yaml: not valid YAML or JSON at line 3')
    },
  })
  r.add(later)
  const outcome = await r.reload()
  assert.deepEqual(outcome.failedSteps, ['policy'])
  assert.equal(later.seen.length, 1)
  assert.match(
    s.messages(50)[0]!,
    /^reload: policy: policy\.yaml: not valid YAML or JSON at line 3; its previous settings stay$/,
  )
})

void test('signals that come during a reload make one more reload, not one each', async () => {
  const s = setup('e.conf', '')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  let runs = 0
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  r.add({
    name: 'slow',
    apply: async () => {
      runs++
      if (runs === 1) await gate
    },
  })
  const first = r.reload()
  const queued = [r.reload(), r.reload(), r.reload()]
  release()
  await Promise.all([first, ...queued])
  assert.equal(runs, 2)
})

void test('the level follows [DEFAULT] debug, for children made before the reload too', async () => {
  const s = setup('f.conf', '[DEFAULT]\ndebug = false\n')
  const child = s.log.child({ component: 'x' })
  const { reconfigureLogger } = await import('./logger.js')
  const r = createReloader(s.config, { log: s.log, load: s.load })
  r.add({ name: 'logging', apply: (next) => reconfigureLogger(s.log, next, {}) })
  child.debug('hidden')
  writeFileSync(s.file, '[DEFAULT]\ndebug = true\n')
  await r.reload()
  child.debug('shown')
  assert.deepEqual(s.messages(20), ['shown'])
  // CYBORG_LOG_LEVEL wins over the file, as at start.
  reconfigureLogger(s.log, s.config, { CYBORG_LOG_LEVEL: 'warn' })
  assert.equal(s.log.level, 'warn')
  assert.equal(pino.levels.values[child.level], 40)
})
