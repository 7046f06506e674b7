/**
 * What bench/dashboard.ts measures in the browser: one cold load of a dashboard page (a fresh
 * browser context, so nothing is cached) through the page's own performance API, and the rows of
 * the devices table before and after one scroll to the bottom.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import type { Browser } from 'playwright-core'

/** One cold load of the Fleet page, in ms since navigation start (bytes as transferred). */
export interface FleetLoad {
  domInteractiveMs: number
  domContentLoadedMs: number
  loadMs: number
  /** `performance.mark('fleet-drawn')`: the fleet's counts, hosts and capacity are on the page. */
  fleetDrawnMs: number
  transferredBytes: number
  /** Each API call the page made: its path, bytes transferred, duration. */
  calls: { path: string; bytes: number; ms: number }[]
  jsHeapUsedBytes: number | null
  domNodes: number
  hostRows: number
}

const round = (x: number) => Math.round(x * 10) / 10

interface Measured {
  domInteractive: number
  domContentLoaded: number
  load: number
  drawn: number
  navBytes: number
  resources: { name: string; bytes: number; ms: number }[]
  heap: number | null
  nodes: number
  hostRows: number
}

/** Run in the page (a string: this file is typed without the DOM's types): its own entries. */
const MEASURE = `(() => {
  const nav = performance.getEntriesByType('navigation')[0]
  const mem = performance.memory
  return {
    domInteractive: nav.domInteractive,
    domContentLoaded: nav.domContentLoadedEventEnd,
    load: nav.loadEventEnd,
    drawn: performance.getEntriesByName('fleet-drawn')[0].startTime,
    navBytes: nav.transferSize,
    resources: performance.getEntriesByType('resource').map((r) => ({
      name: r.name, bytes: r.transferSize, ms: r.duration,
    })),
    heap: mem ? mem.usedJSHeapSize : null,
    nodes: document.getElementsByTagName('*').length,
    hostRows: document.querySelectorAll('tr[data-host]').length,
  }
})()`

/** Opens `url` in a fresh context and waits for the `fleet-drawn` mark. */
export async function loadFleetPage(browser: Browser, url: string): Promise<FleetLoad> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    const page = await context.newPage()
    await page.goto(url, { waitUntil: 'load' })
    await page.waitForFunction("performance.getEntriesByName('fleet-drawn').length > 0", null, {
      timeout: 60_000,
    })
    // In the page: the performance API's own entries (and Chromium's performance.memory).
    const m = await page.evaluate<Measured>(MEASURE)
    return {
      domInteractiveMs: round(m.domInteractive),
      domContentLoadedMs: round(m.domContentLoaded),
      loadMs: round(m.load),
      fleetDrawnMs: round(m.drawn),
      transferredBytes: m.navBytes + m.resources.reduce((s, r) => s + r.bytes, 0),
      calls: m.resources
        .filter((r) => !r.name.includes('/dashboard/assets/'))
        .map((r) => ({ path: new URL(r.name).pathname, bytes: r.bytes, ms: round(r.ms) })),
      jsHeapUsedBytes: m.heap,
      domNodes: m.nodes,
      hostRows: m.hostRows,
    }
  } finally {
    await context.close()
  }
}

/** The devices table's rows after load and after one scroll to the bottom (0: not built). */
export async function devicesTableRows(
  browser: Browser,
  url: string,
): Promise<{ afterLoad: number; afterScroll: number; built: boolean }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    const page = await context.newPage()
    await page.goto(url, { waitUntil: 'networkidle' })
    const rows = () => page.locator('main table tbody tr').count()
    const afterLoad = await rows()
    // The window and every scrolling region, to the bottom: a paged table reads its next page.
    await page.evaluate(`window.scrollTo(0, document.documentElement.scrollHeight)
      for (const el of document.querySelectorAll('.scroll, [role=region]'))
        el.scrollTop = el.scrollHeight`)
    await page.waitForLoadState('networkidle')
    await page.waitForTimeout(500)
    const afterScroll = await rows()
    return { afterLoad, afterScroll, built: afterLoad > 0 }
  } finally {
    await context.close()
  }
}

/** Saves the Fleet page as drawn, with all hosts shown, and filtered, into `dir` (for a look). */
export async function screenshots(browser: Browser, url: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true })
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    const page = await context.newPage()
    for (const [name, query] of [
      ['bench-fleet', ''],
      ['bench-fleet-all', '?hosts=all'],
      ['bench-fleet-filtered', '?host=0004'],
    ] as const) {
      await page.goto(`${url}${query}`)
      await page.getByTestId('device-total').waitFor()
      await page.screenshot({
        path: path.join(dir, `${name}.png`),
        fullPage: name !== 'bench-fleet-all',
      })
    }
  } finally {
    await context.close()
  }
}
