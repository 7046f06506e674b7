/**
 * The all-in-one mode (`cyborg up`, SQLite in a fresh state directory, the fake FPGA): how long from
 * the spawn until GET /v2/devices lists the fake device, and its memory after 1,000 requests.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { scrapeEventLoopLag, type LagFigures } from '../support/load.js'
import { cpuMs, freePort, heapMb, memoryMb, rssMb, startCyborg, until } from './process.js'
import type { Cyborg, Runner } from './process.js'

export interface StartFigures {
  /** From the spawn to the first GET /v2/devices that lists the fake device. */
  visibleMs: number
  /** The node process's CPU time (user + system) by then: what other load on the machine disturbs less. */
  cpuMs: number
}

async function upOnce<T>(runner: Runner, then: (c: Cyborg, url: string) => Promise<T>): Promise<T> {
  const state = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-footprint-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const c = startCyborg(runner, ['up'], {
    CYBORG_API__PORT: String(port),
    CYBORG_DEFAULT__STATE_PATH: state,
  })
  try {
    return await then(c, url)
  } finally {
    await c.stop()
    await rm(state, { recursive: true, force: true })
  }
}

const listsFake = (url: string) => async () => {
  const body = (await (await fetch(`${url}/v2/devices`)).json()) as { devices?: unknown[] }
  return (body.devices?.length ?? 0) > 0
}

/** One start: spawn, poll every 5 ms, stop. */
export function startOnce(runner: Runner): Promise<StartFigures> {
  const t0 = performance.now()
  return upOnce(runner, async (c, url) => {
    await until(c, 60_000, listsFake(url))
    return { visibleMs: Math.round(performance.now() - t0), cpuMs: cpuMs(c.pid()) }
  })
}

export interface RequestsFigures {
  rssAtReadyMb: number
  rssAfterRequestsMb: number
  requests: number
  failed: number
  /** The service's own lag over the requests, from its /metrics. */
  serverEventLoopLag: LagFigures | null
  heapMb: Awaited<ReturnType<typeof heapMb>>
  memoryMb: ReturnType<typeof memoryMb>
}

/** The paths 1,000 requests cycle through: the reads an operator's tools and Nova make. */
export async function readPaths(url: string): Promise<string[]> {
  const { devices } = (await (await fetch(`${url}/v2/devices`)).json()) as {
    devices: { uuid: string }[]
  }
  return [
    '/v2/devices',
    `/v2/devices/${devices[0]!.uuid}`,
    '/v2/deployables',
    '/v2/device_profiles',
    '/v2/accelerator_requests',
    '/v2',
    '/v1/accelerators',
    '/',
  ]
}

/** `requests` GETs, `concurrency` at a time, over `paths`; returns how many did not answer 2xx. */
export async function issue(url: string, paths: string[], requests: number, concurrency = 4) {
  let next = 0
  let failed = 0
  const worker = async () => {
    while (next < requests) {
      const p = paths[next++ % paths.length]!
      const res = await fetch(`${url}${p}`).catch(() => null)
      if (!res?.ok) failed++
      await res?.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return failed
}

/** RSS of `cyborg up` once ready, and after 1,000 GETs (a second after, when the last is served). */
export function afterRequests(runner: Runner, requests = 1000): Promise<RequestsFigures> {
  return upOnce(runner, async (c, url) => {
    await until(c, 60_000, listsFake(url))
    const rssAtReadyMb = rssMb(c.pid())
    await scrapeEventLoopLag(`${url}/metrics`)
    const failed = await issue(url, await readPaths(url), requests)
    const serverEventLoopLag = await scrapeEventLoopLag(`${url}/metrics`)
    await new Promise((r) => setTimeout(r, 1000))
    return {
      rssAtReadyMb,
      rssAfterRequestsMb: rssMb(c.pid()),
      heapMb: await heapMb(`${url}/metrics`),
      memoryMb: memoryMb(c.pid()),
      requests,
      failed,
      serverEventLoopLag,
    }
  })
}
