/**
 * Real Nova's Cyborg client (Debian python3-nova, `nova.accelerator.cyborg`), one step at a time
 * through test/e2e/nova-client.py under /usr/bin/python3. Missing python3-nova skips the tests,
 * unless CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from '../service.js'

const NOVA = '/usr/lib/python3/dist-packages/nova/accelerator/cyborg.py'

/** Why the Nova client tests cannot run here, or undefined when they can. */
export function novaClientSkip(): string | undefined {
  if (existsSync(NOVA)) return undefined
  if (process.env.CYBORG_REQUIRE_SERVICES === '1')
    throw new Error(`${NOVA} is missing (install python3-nova)`)
  return 'python3-nova not installed'
}

/** Runs one step against Cyborg at `baseUrl`; resolves with its exit code and parsed JSON output. */
export function novaStep(
  baseUrl: string,
  args: string[],
): Promise<{ code: number; out: unknown; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      '/usr/bin/python3',
      [path.join(ROOT, 'test/e2e/nova-client.py'), `${baseUrl}/v2`, ...args],
      {
        env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0
        let out: unknown = stdout
        try {
          out = JSON.parse(stdout)
        } catch {
          // not JSON: keep the text for the failure message
        }
        resolve({ code, out, stderr })
      },
    )
  })
}
