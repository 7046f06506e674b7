/**
 * The checks every dashboard page passes in the browser tests (test/web/): it does not scroll
 * sideways on a phone (the widest offenders named when it does), and axe-core finds no serious
 * or critical violation. Screenshots go to test-artifacts/dashboard/.
 */
import assert from 'node:assert/strict'
import { mkdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { ROOT } from './service.js'

export const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')

/** Saves the whole page as test-artifacts/dashboard/`name`.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true })
}

/** The page is no wider than the window: wide tables scroll inside their own region. */
export async function assertNoSidewaysScroll(page: Page): Promise<void> {
  const overflow = await page.evaluate('document.documentElement.scrollWidth > innerWidth')
  if (!overflow) return
  const wide = await page.evaluate(
    `[...document.querySelectorAll('main *')]
      .filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.scroll'))
      .slice(0, 5)
      .map((e) => e.tagName + '.' + e.className)`,
  )
  assert.fail(`the page scrolls sideways at ${page.viewportSize()?.width} px: ${String(wide)}`)
}

/** axe-core (its own API, injected into the page) finds no serious or critical violation. */
export async function assertAccessible(page: Page): Promise<void> {
  const axe = await readFile(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')
  await page.addScriptTag({ content: axe })
  const violations = await page.evaluate<{ id: string; impact: string }[]>(
    'axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))',
  )
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(bad, [], JSON.stringify(violations))
}
