/**
 * SIGHUP on a real `cyborg up` process: policy.yaml and cyborg.conf are read again and applied,
 * broken files keep what runs and say why in the log, and the log file is reopened by name after
 * a logrotate-style rename.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startService } from '../support/service.js'

/** Polls `check` every 50 ms until it holds; fails with `what` after `ms`. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const RULE = 'cyborg:device_profile:get_all'

void test('SIGHUP reloads policy and config, keeps them when broken, and reopens the log file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-sighup-'))
  const conf = join(dir, 'cyborg.conf')
  const policy = join(dir, 'policy.yaml')
  const logFile = join(dir, 'cyborg.log')
  const confText = (debug: string) =>
    `[DEFAULT]\ndebug = ${debug}\nlog_dir = ${dir}\nlog_file = cyborg.log\n\n[oslo_policy]\npolicy_file = ${policy}\n`
  writeFileSync(conf, confText('false'))
  writeFileSync(policy, '# the defaults\n')
  const service = await startService({ command: ['up', '--config-file', conf] })
  const log = (file = logFile) => (existsSync(file) ? readFileSync(file, 'utf8') : '')
  const status = async () => (await fetch(`${service.url}/v2/device_profiles`)).status
  const hup = () => service.child.kill('SIGHUP')
  try {
    assert.equal(service.output(), '', 'with log_file set, nothing goes to stdout')
    assert.match(log(), /cyborg is ready/)
    assert.equal(await status(), 200)

    // A policy that forbids the call, even to an admin: applied on SIGHUP.
    writeFileSync(policy, `"${RULE}": "!"\n`)
    hup()
    await until('the new policy forbids the call', async () => (await status()) === 403)

    // A broken policy file: the rules in force stay, and the log names the file and the line.
    writeFileSync(policy, `"${RULE}": "@"\n"x": [unclosed\n`)
    hup()
    await until('the broken policy is reported', () => /keeping the rules in force/.test(log()))
    assert.match(log(), /policy\.yaml: not valid YAML or JSON at line \d+/)
    assert.equal(await status(), 403)

    // A broken cyborg.conf: nothing of it applies; the log names the file and the line.
    writeFileSync(conf, confText('maybe'))
    hup()
    await until('the broken config is reported', () =>
      /keeping the running configuration/.test(log()),
    )
    assert.match(log(), /cyborg\.conf:2: \[DEFAULT\] debug = \\"maybe\\": expected a boolean/)

    // logrotate: the file is renamed, then SIGHUP; the lines from then on go to a new file of
    // the old name. The fixed config turns debug on at the same time.
    writeFileSync(conf, confText('true'))
    renameSync(logFile, `${logFile}.1`)
    hup()
    await until('a new log file with the reload in it', () => /configuration reloaded/.test(log()))
    assert.match(log(), /Option \[DEFAULT\] debug changed from \[false\] to \[true\]/)
    assert.match(log(`${logFile}.1`), /cyborg is ready/)
    assert.doesNotMatch(log(), /cyborg is ready/)
  } finally {
    assert.equal(await service.stop(), 0)
  }
  // The level applied: the shutdown's debug lines are there.
  assert.match(log(), /"level":20,.*"msg":"stopped"/)
  rmSync(dir, { recursive: true, force: true })
})
