/**
 * How `cyborg` fails, run as an operator runs it (bin/cyborg): one line on stderr that names the
 * flag or file and what to do, with echoed values cut, URL passwords and tokens masked; every
 * numeric option's range checked; and a client timeout (`--timeout`, CYBORG_TIMEOUT, 30 s by
 * default) for a server that accepts and never answers. docs/cli.md, "Errors".
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { cyborg, cyborgFails } from '../support/cli.js'
import { freePort } from '../support/service.js'

void describe('cyborg fails in one line', () => {
  let dir: string
  let env: Record<string, string>
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-cli-errors-'))
    // Nothing here may open a database: this one does not exist, and must stay so.
    env = { CYBORG_DATABASE__CONNECTION: `sqlite:///${dir}/none/cyborg.sqlite` }
  })
  after(() => rm(dir, { recursive: true, force: true }))

  void it('a mistyped flag: the flag, the suggestion and where to look, not the usage', async () => {
    const r = await cyborgFails(['device', 'list', '--fromat', 'json'], env, /./)
    assert.equal(
      r.stderr,
      "cyborg: error: unknown option '--fromat' (did you mean --format?); see 'cyborg device list --help'\n",
    )
    const unknown = await cyborgFails(['devcie', 'list'], env, /./)
    assert.match(
      unknown.stderr,
      /^cyborg: error: unknown command 'devcie'.*; see 'cyborg --help'\n$/,
    )
    const missing = await cyborgFails(['device', 'show'], env, /./)
    assert.equal(
      missing.stderr,
      "cyborg: error: missing required argument 'uuid'; see 'cyborg device show --help'\n",
    )
  })

  void it('a 100,000-character value is echoed cut to 64 characters', async () => {
    const long = 'x'.repeat(100_000)
    const r = await cyborgFails(['device', 'list', '--format', long], env, /--format/)
    assert.ok(r.stderr.length < 400, `${r.stderr.length} characters`)
    assert.ok(r.stderr.includes(`'${'x'.repeat(64)}…'`), r.stderr)
    const url = await cyborgFails(['device', 'list', '--url', `http://[${long}`], env, /--url/)
    assert.ok(url.stderr.length < 600, `${url.stderr.length} characters`)
  })

  void it('a password in --url and the token are never printed', async () => {
    const port = await freePort()
    const r = await cyborgFails(
      ['device', 'list', '--url', `http://admin:secretpw@127.0.0.1:${port}`],
      { ...env, OS_TOKEN: 'tok-3f9a2c' },
      /cannot reach the Cyborg API at http:\/\/admin:\*\*\*@127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    )
    assert.ok(!r.stderr.includes('secretpw'), r.stderr)
    const bad = await cyborgFails(
      ['device', 'list', '--url', 'ht!tp://admin:secretpw@x'],
      env,
      /is not a URL/,
    )
    assert.ok(!bad.stderr.includes('secretpw'), bad.stderr)
  })

  void it('every numeric option is checked against its range', async () => {
    const refused: [string[], RegExp][] = [
      [
        ['custody', 'verify', '--workers', '99'],
        /option '--workers <n>' argument '99' is invalid\. expected auto or a whole number from 1 to 8; see 'cyborg custody verify --help'/,
      ],
      [['custody', 'verify', '--page-size', '0'], /'--page-size <n>' argument '0' is invalid/],
      [['custody', 'export', '--page-size', '-3'], /'--page-size <n>' argument '-3' is invalid/],
      [['custody', 'list', '--limit', 'ten'], /'--limit <n>' argument 'ten' is invalid/],
      [['accelerator', 'list', '--limit', '0'], /'--limit <n>' argument '0' is invalid/],
      [
        ['webhook', 'deliveries', 'w', '--limit', '5000'],
        /'--limit <n>' argument '5000' is invalid\. expected a whole number from 1 to 1000/,
      ],
      [['device', 'list', '--timeout', '0'], /'--timeout <seconds>' argument '0' is invalid/],
    ]
    for (const [args, pattern] of refused) await cyborgFails(args, env, pattern)
    await cyborgFails(
      ['device', 'list'],
      { ...env, CYBORG_TIMEOUT: 'soon' },
      /'--timeout <seconds>' value 'soon' from env 'CYBORG_TIMEOUT' is invalid/,
    )
  })

  void it('--public-key that is not an Ed25519 PEM public key names the file', async () => {
    await cyborgFails(
      ['custody', 'verify', '--public-key', '/etc/passwd'],
      env,
      /^cyborg custody verify: the file \/etc\/passwd is not a PEM public key \(--public-key\); expected the Ed25519 public key/,
    )
    await cyborgFails(
      ['custody', 'verify', '--public-key', `${dir}/absent.pem`],
      env,
      /^cyborg custody verify: cannot read --public-key .*absent\.pem: ENOENT\n$/,
    )
    const rsa = path.join(dir, 'rsa.pem')
    const { stdout } = await promisify(execFile)('openssl', [
      ...['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024'],
    ])
    const pub = await promisify(execFile)('sh', [
      '-c',
      `printf '%s' "$0" | openssl pkey -pubout -out ${rsa}`,
      stdout,
    ])
    assert.equal(pub.stderr, '')
    await cyborgFails(
      ['custody', 'verify', '--public-key', rsa],
      env,
      /the file .*rsa\.pem holds an rsa key \(--public-key\)/,
    )
  })

  void describe('a server that accepts and never answers', () => {
    let server: Server
    let port: number
    const held: Socket[] = []
    before(async () => {
      server = createServer((socket) => void held.push(socket))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as { port: number }).port
    })
    after(async () => {
      for (const s of held) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    })

    void it('--timeout (and CYBORG_TIMEOUT) ends the wait, naming the URL and the limit', async () => {
      const url = `http://ops:pw123456@127.0.0.1:${port}`
      const r = await cyborgFails(
        ['device', 'list', '--url', url, '--timeout', '1'],
        env,
        /^cyborg device list: the Cyborg API at http:\/\/ops:\*\*\*@127\.0\.0\.1:\d+ did not answer within 1 s \(--timeout or CYBORG_TIMEOUT\)/,
      )
      assert.ok(!r.stderr.includes('pw123456'))
      await cyborgFails(
        ['host', 'list', '--url', `http://127.0.0.1:${port}`],
        { ...env, CYBORG_TIMEOUT: '1' },
        /did not answer within 1 s/,
      )
    })
  })

  void it('--help still prints the usage, and the default timeout is documented there', async () => {
    const r = await cyborg(['device', 'list', '--help'], env)
    assert.equal(r.code, 0)
    assert.match(r.stdout, /--timeout <seconds>.*\(default: 30, env: CYBORG_TIMEOUT\)/s)
  })
})
