/**
 * A real OpenStack Glance for one test file (Debian's glance-api, via scripts/glance.sh, on a free
 * loopback port, SQLite and a file store in a temporary directory). Skipped without the package,
 * unless CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort, ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/glance.sh')

export interface RunningGlance {
  url: string
  /** Where the file store keeps image bytes (`<dir>/<image id>`), to play a corrupted store. */
  imagesDir: string
  /** Creates an image with `properties`, uploads `bytes`, and returns its id. */
  upload(bytes: Buffer, properties?: Record<string, string>): Promise<string>
  stop(): Promise<void>
}

export async function glanceSkip(): Promise<string | undefined> {
  try {
    await access('/usr/bin/glance-api')
    return undefined
  } catch {
    const why = 'glance-api is not installed (run scripts/ci-services.sh as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

export async function startGlance(): Promise<RunningGlance> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-glance-'))
  const { stdout } = await run('bash', [SCRIPT, 'up', dir, String(await freePort())], {
    timeout: 90_000,
  })
  const url = stdout.trim().split('\n').pop()!
  return {
    url,
    imagesDir: path.join(dir, 'images'),
    async upload(bytes, properties = {}) {
      const created = await fetch(`${url}/v2/images`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'bitstream',
          disk_format: 'raw',
          container_format: 'bare',
          ...properties,
        }),
      })
      if (created.status !== 201)
        throw new Error(`image create: ${created.status} ${await created.text()}`)
      const { id } = (await created.json()) as { id: string }
      const put = await fetch(`${url}/v2/images/${id}/file`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: bytes,
      })
      if (put.status !== 204) throw new Error(`image upload: ${put.status} ${await put.text()}`)
      return id
    },
    async stop() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
      await rm(dir, { recursive: true, force: true })
    },
  }
}
