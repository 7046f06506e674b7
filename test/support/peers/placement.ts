/**
 * A real OpenStack Placement for one test file: Debian's placement-api started by
 * scripts/placement.sh on a free loopback port, with its own SQLite database, stopped after.
 * Without the package the tests skip, unless CYBORG_REQUIRE_SERVICES=1 (CI), where that fails.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { createPlacementClient, type PlacementClient } from '../../../src/openstack/placement.js'
import { freePort, ROOT } from '../service.js'

const run = promisify(execFile)
const SCRIPT = path.join(ROOT, 'scripts/placement.sh')

export interface RunningPlacement {
  url: string
  /** A client for reading back and for playing Nova (allocations). */
  client: PlacementClient
  stop(): Promise<void>
}

/** Why the Placement tests cannot run here, or undefined when they can. */
export async function placementSkip(): Promise<string | undefined> {
  try {
    await access('/usr/bin/placement-api')
    return undefined
  } catch {
    const why = 'placement-api is not installed (run scripts/ci-services.sh as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

export async function startPlacement(): Promise<RunningPlacement> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-placement-'))
  const port = await freePort()
  const { stdout } = await run('bash', [SCRIPT, 'up', dir, String(port)], { timeout: 90_000 })
  const url = stdout.trim().split('\n').pop()!
  return {
    url,
    client: createPlacementClient({ endpoint: url, token: 'admin', timeoutMs: 30_000 }),
    async stop() {
      await run('bash', [SCRIPT, 'down', dir], { timeout: 30_000 })
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A Placement client that counts its calls (for "only what changed" checks). */
export function countingClient(url: string): { client: PlacementClient; calls: string[] } {
  const calls: string[] = []
  const client = createPlacementClient({
    endpoint: url,
    token: 'admin',
    timeoutMs: 30_000,
    onCall: (method, p, status) =>
      calls.push(`${method} ${p.replace(/[0-9a-f-]{36}/g, '{uuid}')} ${status}`),
  })
  return { client, calls }
}

/** Nova's part, done by hand: allocate `amount` of `rc` from provider `rp` to a new consumer. */
export async function allocate(
  url: string,
  rp: string,
  rc: string,
  amount: number,
  consumer: string,
): Promise<void> {
  const res = await fetch(`${url}/allocations/${consumer}`, {
    method: 'PUT',
    headers: {
      'x-auth-token': 'admin',
      'openstack-api-version': 'placement 1.39',
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      allocations: { [rp]: { resources: { [rc]: amount } } },
      project_id: '8d3cb2d1-0d2f-4a4c-8b6b-1f6a0b0f0001',
      user_id: '8d3cb2d1-0d2f-4a4c-8b6b-1f6a0b0f0002',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    }),
  })
  if (res.status !== 204) throw new Error(`allocation failed: ${res.status} ${await res.text()}`)
}

/** Removes every allocation of `consumer`. */
export async function deallocate(url: string, consumer: string): Promise<void> {
  const res = await fetch(`${url}/allocations/${consumer}`, {
    method: 'DELETE',
    headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' },
  })
  if (res.status !== 204) throw new Error(`deallocation failed: ${res.status} ${await res.text()}`)
}

/**
 * A provider's `reserved` for `rc` once any cleaning hold has ended: the conductor shows released
 * units reserved for up to `[conductor] clean_placement_hold_ms` after their cleans (1 s by
 * default) and then syncs the host again by itself (docs/cleaning.md, "The hold"). Polled for up
 * to 5 s; the last value read.
 */
export async function reservedAfterHold(
  client: PlacementClient,
  rp: string,
  rc = 'FPGA',
): Promise<number | undefined> {
  const reserved = async () => (await client.getInventories(rp))[rc]?.reserved
  for (let n = 0; n < 100 && (await reserved()) !== 0; n++)
    await new Promise((r) => setTimeout(r, 50))
  return reserved()
}
