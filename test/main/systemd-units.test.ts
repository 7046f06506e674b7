/**
 * etc/systemd/*.service pass `systemd-analyze verify`, and say what docs/deploy.md says they do.
 * verify checks that ExecStart's program exists, so each unit is verified as a copy whose
 * /opt/cyborg/bin/cyborg is a stand-in script in a temporary directory; nothing else is changed.
 * Skipped only without systemd-analyze and without CYBORG_REQUIRE_SERVICES=1 (CI installs it:
 * scripts/ci-services.sh).
 */
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from '../support/service.js'

const UNITS = ['cyborg-api.service', 'cyborg-conductor.service', 'cyborg-agent.service'] as const
const has = (tool: string) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0
const analyze = has('systemd-analyze')
const required = process.env.CYBORG_REQUIRE_SERVICES === '1'

function run(cmd: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0
      resolve({ code, output: `${stdout}${stderr}`.trim() })
    })
  })
}

const unitText = (unit: string) => readFileSync(join(ROOT, 'etc/systemd', unit), 'utf8')

/**
 * What verify said about `unit` itself. It loads the units ours are ordered after (postgresql,
 * rabbitmq-server, …) from this machine, and reports their own flaws too (Debian's keystone.service
 * orders itself after itself); a line that starts with another unit's name is about that unit.
 */
function aboutUnit(output: string, unit: string): string {
  return output
    .split('\n')
    .filter((line) => {
      const other =
        /^([\w@.-]+\.(service|target|socket|mount|timer|path|slice|scope|device)):/.exec(line)
      return line.trim() !== '' && (!other || other[1] === unit)
    })
    .join('\n')
}

/** `Key=value` lines of a unit (comments and sections dropped); a key may repeat. */
function settings(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith('[')) continue
    const eq = line.indexOf('=')
    const key = line.slice(0, eq)
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1)])
  }
  return out
}

describe('systemd units', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'cyborg-units-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const skip =
    !analyze && !required
      ? 'systemd-analyze is missing (scripts/ci-services.sh installs it)'
      : false
  for (const unit of UNITS) {
    it(`${unit} passes systemd-analyze verify`, { skip }, async () => {
      const fake = join(dir, 'cyborg')
      writeFileSync(fake, '#!/bin/sh\nexit 0\n')
      chmodSync(fake, 0o755)
      const text = unitText(unit)
      assert.match(text, /^ExecStart=\/opt\/cyborg\/bin\/cyborg /m)
      const copy = join(dir, unit)
      writeFileSync(copy, text.replace('ExecStart=/opt/cyborg/bin/cyborg ', `ExecStart=${fake} `))
      const { code, output } = await run('systemd-analyze', ['verify', copy])
      assert.equal(aboutUnit(output, unit), '', `systemd-analyze verify ${unit} said:\n${output}`)
      assert.equal(code, 0, output)
    })
  }

  it('a unit with a mistake fails the same check (the check can fail)', { skip }, async () => {
    const copy = join(dir, 'cyborg-broken.service')
    writeFileSync(copy, unitText('cyborg-api.service').replace('Type=exec', 'Type=exec-please'))
    const { output } = await run('systemd-analyze', ['verify', copy])
    assert.match(
      aboutUnit(output, 'cyborg-broken.service'),
      /cyborg-broken\.service:\d+: Failed to parse service type, ignoring: exec-please/,
    )
  })

  it('each unit runs its command with the config file and reloads with SIGHUP', () => {
    for (const unit of UNITS) {
      const s = settings(unitText(unit))
      const command = unit.replace(/^cyborg-|\.service$/g, '')
      assert.deepEqual(s.get('ExecStart'), [
        `/opt/cyborg/bin/cyborg ${command} --config-file /etc/cyborg/cyborg.conf`,
      ])
      assert.deepEqual(s.get('ExecReload'), ['/bin/kill -HUP $MAINPID'])
      assert.deepEqual(s.get('Restart'), ['on-failure'])
      assert.deepEqual(s.get('Type'), ['exec'], 'no sd_notify: not Type=notify')
      assert.deepEqual(s.get('SyslogIdentifier'), [`cyborg-${command}`])
    }
  })

  it('API and conductor: unprivileged, strict sandbox; the agent: root, devices and sysfs', () => {
    for (const unit of ['cyborg-api.service', 'cyborg-conductor.service']) {
      const s = settings(unitText(unit))
      for (const [key, value] of Object.entries({
        User: 'cyborg',
        ProtectSystem: 'strict',
        PrivateDevices: 'yes',
        ProtectKernelTunables: 'yes',
        NoNewPrivileges: 'yes',
        CapabilityBoundingSet: '',
        StateDirectory: 'cyborg',
        LogsDirectory: 'cyborg',
        RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
      }))
        assert.deepEqual(s.get(key), [value], `${unit} ${key}`)
      assert.ok(s.get('SystemCallFilter')?.includes('@system-service'), unit)
    }
    const agent = settings(unitText('cyborg-agent.service'))
    assert.deepEqual(agent.get('User'), ['root'])
    assert.deepEqual(agent.get('PrivateDevices'), ['no'])
    assert.deepEqual(agent.get('ProtectKernelTunables'), ['no'])
    assert.equal(agent.get('SystemCallFilter'), undefined)
    assert.match(agent.get('ReadWritePaths')?.[0] ?? '', /\/sys\/bus\/pci \/sys\/devices/)
  })

  it(
    'the logrotate snippet parses',
    { skip: has('logrotate') ? false : 'no logrotate' },
    async () => {
      // logrotate -d reads and checks the file and rotates nothing. The copy points at a temporary
      // log, and creates files as root: there is no cyborg user here, and logrotate checks it exists.
      writeFileSync(join(dir, 'x.log'), 'line\n')
      const copy = join(dir, 'logrotate.conf')
      const text = readFileSync(join(ROOT, 'etc/logrotate.d/cyborg'), 'utf8')
      assert.match(text, /^ {4}create 0640 cyborg cyborg$/m)
      writeFileSync(
        copy,
        text
          .replace('/var/log/cyborg/*.log', `${dir}/*.log`)
          .replace('create 0640 cyborg cyborg', 'create 0640 root root'),
      )
      const { code, output } = await run('logrotate', ['-d', '-s', join(dir, 'state'), copy])
      assert.equal(code, 0, output)
      assert.doesNotMatch(output, /error/i, output)
      assert.match(output, /considering log .*x\.log/, output)
    },
  )
})
