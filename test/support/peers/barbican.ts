/**
 * A real OpenStack Barbican for one test file (Debian's barbican-api, via scripts/barbican.sh, on a
 * free loopback port, SQLite and the simple_crypto store in a temporary directory), validating
 * tokens against the test's real Keystone. Skipped without the package, unless
 * CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ADMIN_PASSWORD, type RunningKeystone } from './keystone.js'
import { freePort, ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/barbican.sh')

export interface RunningBarbican {
  url: string
  /**
   * Stores a `certificate` secret as Keystone's admin (project admin), the way
   * `openstack secret store --secret-type certificate` does: PEM as text/plain, or with `der`, the
   * DER bytes as application/octet-stream (base64 on the wire).
   * @returns the secret's uuid (the img_signature_certificate_uuid property)
   */
  storeCertificate(pem: string, options?: { der?: Buffer; name?: string }): Promise<string>
  /** Stores an opaque secret (not a certificate), for the negative case. */
  storeOpaque(bytes: Buffer): Promise<string>
  stop(): Promise<void>
}

export async function barbicanSkip(): Promise<string | undefined> {
  try {
    await access('/usr/bin/barbican-wsgi-api')
    return undefined
  } catch {
    const why = 'barbican-api is not installed (run scripts/ci-services.sh as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

export async function startBarbican(keystone: RunningKeystone): Promise<RunningBarbican> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-barbican-'))
  const { stdout } = await run('bash', [SCRIPT, 'up', dir, String(await freePort())], {
    timeout: 90_000,
    env: { ...process.env, KEYSTONE_URL: keystone.url, KEYSTONE_ADMIN_PASSWORD: ADMIN_PASSWORD },
  })
  const url = stdout.trim().split('\n').pop()!
  const store = async (secret: Record<string, unknown>) => {
    const res = await fetch(`${url}/v1/secrets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': await keystone.adminToken() },
      body: JSON.stringify(secret),
    })
    if (res.status !== 201) throw new Error(`secret store: ${res.status} ${await res.text()}`)
    const { secret_ref: ref } = (await res.json()) as { secret_ref: string }
    return ref.slice(ref.lastIndexOf('/') + 1)
  }
  return {
    url,
    storeCertificate(pem, options = {}) {
      return store({
        name: options.name ?? 'image signing certificate',
        secret_type: 'certificate',
        ...(options.der
          ? {
              payload: options.der.toString('base64'),
              payload_content_type: 'application/octet-stream',
              payload_content_encoding: 'base64',
            }
          : { payload: pem, payload_content_type: 'text/plain' }),
      })
    },
    storeOpaque(bytes) {
      return store({
        name: 'not a certificate',
        secret_type: 'opaque',
        payload: bytes.toString('base64'),
        payload_content_type: 'application/octet-stream',
        payload_content_encoding: 'base64',
      })
    },
    async stop() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
      await rm(dir, { recursive: true, force: true })
    },
  }
}
