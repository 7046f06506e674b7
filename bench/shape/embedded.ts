/**
 * The embedded server of bench/turnover.ts (bench/shape/turnover-embedded.ts: `cyborg up`'s composition
 * with its fake agent and a real Placement) as a child process: started with a cleaning setting and
 * an allocation mode, stopped with the stats it prints.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort, NODE, ROOT } from '../../test/support/service.js'

export interface EmbeddedServer {
  url: string
  rps: string[]
  pid: number
  /** SIGTERM; resolves with the stats it printed (time in cleaning, Placement calls, lag). */
  stop(): Promise<unknown>
}

/** Starts the embedded server; `stop` ends it and resolves with the stats it printed. */
export async function startEmbeddedServer(
  placementUrl: string,
  policy: string,
  delayMs: number,
  allocations: string,
  /** `[conductor] clean_placement_hold_ms`; unset: the default. */
  holdMs?: number,
): Promise<EmbeddedServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-turnover-'))
  const child = spawn(
    NODE,
    [
      '--import',
      'tsx',
      path.join(ROOT, 'bench/shape/turnover-embedded.ts'),
      dir,
      String(await freePort()),
      placementUrl,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        CLEAN_POLICY: policy,
        CLEAN_DELAY_MS: String(delayMs),
        ALLOCATIONS: allocations,
        ...(holdMs === undefined ? {} : { CLEAN_PLACEMENT_HOLD_MS: String(holdMs) }),
      },
    },
  )
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const m = /ready (\S+)/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`turnover-embedded.ts exited with ${code}`)))
  })
  const res = await fetch(`${url}/v2/deployables`)
  const { deployables } = (await res.json()) as { deployables: { rp_uuid: string }[] }
  return {
    url,
    rps: deployables.map((d) => d.rp_uuid),
    pid: child.pid!,
    async stop(): Promise<unknown> {
      child.kill('SIGTERM')
      await new Promise((r) => child.once('exit', r))
      await rm(dir, { recursive: true, force: true })
      const m = /stats (.*)/.exec(out)
      return m ? (JSON.parse(m[1]!) as unknown) : null
    },
  }
}
