/**
 * A real Prometheus for one test file: Debian's prometheus started by scripts/prometheus.sh on a
 * free loopback port, scraping every second the targets the test names, stopped after.
 * Without the package the tests skip, unless CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort, ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/prometheus.sh')

export interface RunningPrometheus {
  url: string
  /** Scrapes these `host:port` targets, each with a `job` label, from now on. */
  scrape(targets: Record<string, string>): Promise<void>
  /** An instant PromQL query through the HTTP API: the result vector. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>
  stop(): Promise<void>
}

/** Why the Prometheus tests cannot run here, or undefined when they can. */
export async function prometheusSkip(): Promise<string | undefined> {
  try {
    await access('/usr/bin/prometheus')
    return undefined
  } catch {
    const why = 'prometheus is not installed (run scripts/ci-services.sh as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

export async function startPrometheus(): Promise<RunningPrometheus> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-prometheus-'))
  const port = await freePort()
  const { stdout } = await run('bash', [SCRIPT, 'up', dir, String(port)], { timeout: 90_000 })
  const url = stdout.trim().split('\n').pop()!
  return {
    url,
    async scrape(targets) {
      const groups = Object.entries(targets).map(([job, target]) => ({
        targets: [target],
        labels: { job },
      }))
      // Written whole and renamed: Prometheus never reads half a file.
      await writeFile(path.join(dir, 'targets.json.tmp'), JSON.stringify(groups))
      await rename(path.join(dir, 'targets.json.tmp'), path.join(dir, 'targets.json'))
    },
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`)
      const body = (await res.json()) as {
        status: string
        error?: string
        data?: { result: { metric: Record<string, string>; value: [number, string] }[] }
      }
      if (body.status !== 'success') throw new Error(`PromQL ${promql}: ${body.error}`)
      return body.data!.result
    },
    async stop() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
      await rm(dir, { recursive: true, force: true })
    },
  }
}
