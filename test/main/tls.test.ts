/**
 * `[api] enable_ssl_api` with `[ssl] cert_file`/`key_file`: `cyborg up` serves HTTPS only with a
 * certificate for 127.0.0.1 signed by a private CA made here with openssl; links say https; the
 * CLI trusts that CA with `--os-cacert`/OS_CACERT and says what to do without it; a missing or
 * foreign key stops start-up with one line naming `[ssl] key_file`; `[ssl] ca_file` requires a
 * client certificate that CA signed.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort, runCommand, startService, type RunningService } from '../support/service.js'
import { cyborg } from '../support/cli.js'

const run = promisify(execFile)

/** A CA, a server certificate for IP 127.0.0.1 that it signed, and a key of no certificate. */
async function makeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  const at = (f: string) => path.join(dir, f)
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Cyborg test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ])
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ])
  await writeFile(at('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    at('server.ext'),
    '-out',
    at('server.pem'),
  ])
  await run('openssl', [
    'genpkey',
    '-algorithm',
    'EC',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-out',
    at('other.key'),
  ])
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    at('client.key'),
    '-out',
    at('client.csr'),
    '-subj',
    '/CN=nova',
  ])
  await run('openssl', [
    'req',
    '-x509',
    '-key',
    at('other.key'),
    '-out',
    at('stranger.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=stranger',
  ])
  await writeFile(at('client.ext'), 'extendedKeyUsage=clientAuth\n')
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    at('client.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    at('client.ext'),
    '-out',
    at('client.pem'),
  ])
}

/** One GET over HTTPS trusting only `ca` (with `client`: presenting that certificate); the status and parsed body. */
function httpsGet(
  url: string,
  ca: Buffer,
  client: { cert?: Buffer; key?: Buffer } = {},
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { ca, ...client, headers: { accept: 'application/json' } },
      (res) => {
        let text = ''
        res.on('data', (d: Buffer) => (text += d.toString()))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: text ? (JSON.parse(text) as unknown) : undefined,
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** One plain-HTTP GET: the status it got, or the error code when no HTTP answer came. */
function plainGet(url: string): Promise<{ status: number } | { error: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(url, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }))
    req.end()
  })
}

describe('the API over TLS ([api] enable_ssl_api)', () => {
  let dir: string
  let ca: Buffer
  let client: { cert: Buffer; key: Buffer }
  let service: RunningService
  let httpsUrl: string
  let tlsEnv: Record<string, string>
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cyborg-tls-'))
    await makeCertificates(dir)
    ca = await readFile(path.join(dir, 'ca.pem'))
    client = {
      cert: await readFile(path.join(dir, 'client.pem')),
      key: await readFile(path.join(dir, 'client.key')),
    }
    tlsEnv = {
      CYBORG_API__ENABLE_SSL_API: 'true',
      CYBORG_SSL__CERT_FILE: path.join(dir, 'server.pem'),
      CYBORG_SSL__KEY_FILE: path.join(dir, 'server.key'),
    }
    service = await startService({
      env: { ...tlsEnv, CYBORG_DEFAULT__HOST: 'tls-host' },
      ready: async (url) =>
        (await httpsGet(`${url.replace('http:', 'https:')}/healthcheck`, ca)).status === 200,
    })
    httpsUrl = `https://127.0.0.1:${service.port}`
  })
  after(async () => {
    if (service) assert.equal(await service.stop(), 0, service.output())
    await rm(dir, { recursive: true, force: true })
  })

  it('serves HTTPS with the configured certificate; the version documents link to https', async () => {
    const v2 = await httpsGet(`${httpsUrl}/v2`, ca)
    assert.equal(v2.status, 200)
    assert.deepEqual((v2.body as { links: unknown }).links, [
      { href: `${httpsUrl}/v2/`, rel: 'self' },
    ])
    const root = await httpsGet(`${httpsUrl}/`, ca)
    const versions = (root.body as { versions: { links: { href: string }[] }[] }).versions
    assert.deepEqual(
      versions.map((v) => v.links[0]!.href),
      [`${httpsUrl}/v2/`, `${httpsUrl}/v1/`],
    )
    assert.match(service.output(), new RegExp(`API at ${httpsUrl.replace(/\./g, '\\.')}/v2`))
  })

  it('answers no plain HTTP on its port', async () => {
    assert.deepEqual(await plainGet(`http://127.0.0.1:${service.port}/v2`), { error: 'ECONNRESET' })
    const cli = await cyborg(['device', 'list', '--url', `http://127.0.0.1:${service.port}`])
    assert.equal(cli.code, 1)
    assert.match(
      cli.stderr,
      RegExp(
        /^cyborg device list: the Cyborg API at http:\/\/127\.0\.0\.1:\d+ dropped the connection \(ECONNRESET\); /
          .source +
          /if it serves HTTPS \(\[api\] enable_ssl_api\), use an https:\/\/ --url\n$/.source,
      ),
    )
  })

  it('the CLI trusts the private CA with --os-cacert or OS_CACERT, and without it says what to do', async () => {
    const listed = await cyborg([
      'device',
      'list',
      '--format',
      'json',
      '--url',
      httpsUrl,
      '--os-cacert',
      path.join(dir, 'ca.pem'),
    ])
    assert.equal(listed.code, 0, listed.stderr)
    assert.ok(Array.isArray(JSON.parse(listed.stdout)))
    const byEnv = await cyborg(['device', 'list', '--format', 'json'], {
      CYBORG_URL: httpsUrl,
      OS_CACERT: path.join(dir, 'ca.pem'),
    })
    assert.equal(byEnv.code, 0, byEnv.stderr)
    const untrusted = await cyborg(['device', 'list', '--url', httpsUrl])
    assert.equal(untrusted.code, 1)
    assert.equal(untrusted.stdout, '')
    assert.match(
      untrusted.stderr,
      RegExp(
        /^cyborg device list: the certificate of the Cyborg API at https:\/\/127\.0\.0\.1:\d+ is not trusted \([A-Z_]+\); /
          .source +
          /pass the CA certificate that signed it with --os-cacert FILE or OS_CACERT\n$/.source,
      ),
    )
    const wrongCa = await cyborg([
      'device',
      'list',
      '--url',
      httpsUrl,
      '--os-cacert',
      path.join(dir, 'server.pem'),
    ])
    assert.equal(wrongCa.code, 1)
    assert.match(
      wrongCa.stderr,
      /is not trusted \([A-Z_]+\);.* did not sign it; pass the CA certificate/,
    )
    const missing = await cyborg([
      'device',
      'list',
      '--url',
      httpsUrl,
      '--os-cacert',
      path.join(dir, 'nope.pem'),
    ])
    assert.equal(missing.code, 1)
    assert.match(
      missing.stderr,
      /^cyborg device list: cannot read the CA certificate file \S+nope\.pem \(--os-cacert or OS_CACERT\): ENOENT\n$/,
    )
  })

  it("stops start-up with one line naming [ssl] key_file when the key is missing or not the certificate's", async () => {
    const port = String(await freePort())
    const state = path.join(dir, 'state')
    const base = { ...tlsEnv, CYBORG_API__PORT: port, CYBORG_DEFAULT__STATE_PATH: state }
    const keyFile = path.join(dir, 'missing.key')
    const missing = await runCommand(['up'], { ...base, CYBORG_SSL__KEY_FILE: keyFile })
    assert.equal(missing.code, 1, missing.output)
    assert.equal(missing.output.trimEnd().split('\n').length, 1, missing.output)
    assert.ok(
      missing.output.includes(
        `CYBORG_SSL__KEY_FILE: [ssl] key_file = "${keyFile}": cannot read ${keyFile}: ENOENT`,
      ),
      missing.output,
    )
    const other = path.join(dir, 'other.key')
    const foreign = await runCommand(['up'], { ...base, CYBORG_SSL__KEY_FILE: other })
    assert.equal(foreign.code, 1, foreign.output)
    assert.equal(foreign.output.trimEnd().split('\n').length, 1, foreign.output)
    assert.ok(
      foreign.output.includes(
        `[ssl] key_file = "${other}": the key in ${other} does not belong to the certificate in ${path.join(dir, 'server.pem')}`,
      ),
      foreign.output,
    )
    const noCert = await runCommand(['up'], { ...base, CYBORG_SSL__CERT_FILE: '' })
    assert.equal(noCert.code, 1, noCert.output)
    assert.match(
      noCert.output,
      /\[ssl\] cert_file = "": a PEM file is required when \[api\] enable_ssl_api = true/,
    )
  })

  it('with [ssl] ca_file, accepts only clients that present a certificate that CA signed', async () => {
    const mutual = await startService({
      env: { ...tlsEnv, CYBORG_SSL__CA_FILE: path.join(dir, 'ca.pem') },
      ready: async (url) =>
        (await httpsGet(`${url.replace('http:', 'https:')}/healthcheck`, ca, client)).status ===
        200,
    })
    try {
      const base = `https://127.0.0.1:${mutual.port}`
      assert.equal((await httpsGet(`${base}/v2`, ca, client)).status, 200)
      await assert.rejects(
        httpsGet(`${base}/v2`, ca),
        (err: NodeJS.ErrnoException) => err.code !== undefined,
      )
      const stranger = {
        cert: await readFile(path.join(dir, 'stranger.pem')),
        key: await readFile(path.join(dir, 'other.key')),
      }
      await assert.rejects(
        httpsGet(`${base}/v2`, ca, stranger),
        (err: NodeJS.ErrnoException) => err.code !== undefined,
      )
    } finally {
      assert.equal(await mutual.stop(), 0, mutual.output())
    }
  })
})
