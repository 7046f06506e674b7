/**
 * An empty fleet in a real browser (docs/dashboard.md, "Made for people"): `cyborg api` alone over
 * a fresh database. Before any schema is applied its reads are a 503 that says what to run (not a
 * 500), which the page prints; after `cyborg db sync` (no conductor, no agent has ever reported)
 * the Fleet page says what to do next instead of drawing empty tables, and the Devices page says
 * there are none.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Browser } from 'playwright-core'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { runCommand, startService, type RunningService } from '../support/service.js'
import { assertAccessible, screenshot } from '../support/web-checks.js'

const broker = await testBroker()
const skip = (await chromiumSkip()) ?? broker.skip

const title = 'the dashboard over an empty fleet in headless chromium against cyborg api'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 120_000 }, () => {
    let vhost: TestVhost
    let service: RunningService
    let browser: Browser
    let stateDir: string

    before(async () => {
      vhost = await broker.createVhost()
      stateDir = await mkdtemp(path.join(tmpdir(), 'cyborg-empty-'))
      service = await startService({
        command: ['api'],
        stateDir,
        compiled: true,
        timeoutMs: 60_000,
        env: { CYBORG_DEFAULT__TRANSPORT_URL: vhost.url, CYBORG_API__API_WORKERS: '1' },
        // Its healthcheck waits for a conductor, which this fleet has none of.
        ready: async (url) => (await fetch(`${url}/dashboard`).catch(() => undefined))?.ok === true,
      })
      browser = await launchChromium()
    })

    after(async () => {
      await browser?.close()
      await service?.stop()
      await vhost?.drop()
      await rm(stateDir, { recursive: true, force: true })
    })

    it('before any schema: the API answers 503 saying what to run, and the page prints it', async () => {
      const res = await fetch(`${service.url}/v2/devices/summary`, {
        headers: { 'OpenStack-API-Version': 'accelerator 2.10' },
      })
      assert.equal(res.status, 503)
      const body = (await res.json()) as { error_message: { faultstring: string } }
      assert.match(body.error_message.faultstring, /no Cyborg schema yet.*cyborg db sync/)
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      await page.goto(`${service.url}/dashboard/fleet`)
      const alert = page.locator('main [role="alert"]').first()
      await alert.waitFor()
      assert.match((await alert.textContent()) ?? '', /cyborg db sync/)
      await page.close()
      const sync = await runCommand(['db', 'sync'], { CYBORG_DEFAULT__STATE_PATH: stateDir })
      assert.equal(sync.code, 0, sync.output)
    })

    it('the Fleet page says what to do next; the Devices page says there are none', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      await page.goto(`${service.url}/dashboard/fleet`)
      const empty = page.getByRole('heading', { name: 'No hosts yet' })
      await empty.waitFor()
      const steps = await page.locator('section.empty li').allTextContents()
      assert.equal(steps.length, 3, steps.join(' | '))
      assert.match(steps[0]!, /cyborg agent.*enabled_drivers/s)
      assert.match(steps[1]!, /cyborg status/)
      assert.equal(await page.locator('table').count(), 0, 'no empty tables')
      await screenshot(page, 'fleet-empty')
      await assertAccessible(page)
      await page.getByRole('link', { name: 'Devices', exact: true }).click()
      await page.getByTestId('devices-none').waitFor()
      assert.equal(new URL(page.url()).pathname, '/dashboard/devices')
      await page.close()
    })
  })
