/** `cyborg policy list` as an operator runs it: bin/cyborg as a child process, with a temporary config and policy file. */
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN } from '../support/cli.js'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-policy-cli-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

function run(args: string[]) {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CYBORG_')) env[k] = v
  const r = spawnSync(BIN, args, { cwd: dir, env, encoding: 'utf8' })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

function write(name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

void test('policy list prints every rule with its default, marks overrides, and warns of unknown names', () => {
  const conf = write('cyborg.conf', '[DEFAULT]\nhost = h\n')
  write('policy.yaml', '"cyborg:device:get_all": "rule:project_reader_or_admin"\nmine: "role:x"\n')
  const r = run(['policy', 'list', '--config-file', conf])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, /warning: .*"mine" is not a Cyborg policy rule/)
  assert.match(
    r.stdout,
    /# List accelerator requests.*\n# GET \/v2\/accelerator_requests\n# \(default\)\n"cyborg:arq:get_all": "rule:project_reader_or_admin"\n/,
  )
  assert.ok(
    r.stdout.includes(
      `# (overridden in ${join(dir, 'policy.yaml')}; default: "rule:project_manager_or_admin")\n"cyborg:device:get_all": "rule:project_reader_or_admin"\n`,
    ),
    r.stdout,
  )
  assert.match(r.stdout, /"mine": "role:x"/)
})

void test('policy list --format json gives every rule, its value and its source', () => {
  const conf = write(
    'json.conf',
    `[oslo_policy]\npolicy_file = ${write('p.json', '{"cyborg:status:get": "@"}')}\n`,
  )
  const r = run(['policy', 'list', '--format', 'json', '--config-file', conf])
  assert.equal(r.code, 0, r.stderr)
  const rules = JSON.parse(r.stdout) as {
    name: string
    rule: string
    default: string
    overridden: boolean
    source: string
  }[]
  const status = rules.find((x) => x.name === 'cyborg:status:get')
  assert.deepEqual(
    {
      rule: status?.rule,
      default: status?.default,
      overridden: status?.overridden,
      source: status?.source,
    },
    {
      rule: '@',
      default: 'rule:project_manager_or_admin',
      overridden: true,
      source: join(dir, 'p.json'),
    },
  )
  assert.ok(
    rules.some((x) => x.name === 'cyborg:arq:delete' && !x.overridden && x.source === 'default'),
  )
})

void test('a syntax error in the policy file exits 1 with one line naming the file, the rule and the problem', () => {
  const policy = write('bad.yaml', '"cyborg:arq:create": "role:member and (role:reader"\n')
  const conf = write('bad.conf', `[oslo_policy]\npolicy_file = ${policy}\n`)
  const r = run(['policy', 'list', '--config-file', conf])
  assert.equal(r.code, 1)
  assert.equal(r.stdout, '')
  assert.match(
    r.stderr,
    new RegExp(
      `${policy}: policy rule "cyborg:arq:create": expected "\\)" to close the "\\(" at column 17`,
    ),
  )
})
