/**
 * The dashboard in a real browser (issue 32, docs/dashboard.md): `cyborg up` on a fixture host
 * (two A100s, nvidia-gpu/ecc, one with an uncorrectable ECC count), the Fleet page opened in
 * Debian's headless chromium. It shows the counts the API holds, at its own URL, with health in
 * words and not colour alone; its script is under budget; axe-core finds nothing serious or
 * critical. Screenshots go to test-artifacts/dashboard/.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import { gpuHost, setEccErrors, type GpuHost } from '../support/gpu-host.js'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import { ROOT, startService, type RunningService } from '../support/service.js'

const skip = await chromiumSkip()
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')
const V26 = { 'OpenStack-API-Version': 'accelerator 2.6' }

interface Device {
  type: string
  health: string
}

const title = 'the dashboard’s Fleet page in headless chromium against cyborg up'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 180_000 }, () => {
    let host: GpuHost
    let service: RunningService
    let browser: Browser
    let devices: Device[]

    before(async () => {
      host = await gpuHost('dash-host')
      await setEccErrors(host, '0000:3b:00.0', 2)
      service = await startService({
        compiled: true,
        timeoutMs: 90_000,
        env: {
          CYBORG_DEFAULT__HOST: host.host,
          CYBORG_AGENT__HOST_ROOT: host.root,
          CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu',
          CYBORG_AGENT__AUTO_ACTIVATE: 'true',
          PATH: `${host.bin}:${process.env.PATH ?? ''}`,
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/devices`, { headers: V26 })
          const body = (await r.json()) as { devices: Device[] }
          const cap = await fetch(`${url}/v2/capacity`, { headers: V26 })
          const rows = ((await cap.json()) as { capacity: unknown[] }).capacity
          return r.ok && body.devices.length === 2 && rows.length > 0
        },
      })
      const r = await fetch(`${service.url}/v2/devices`, { headers: V26 })
      devices = ((await r.json()) as { devices: Device[] }).devices
      browser = await launchChromium()
      await mkdir(ARTIFACTS, { recursive: true })
    })

    after(async () => {
      await browser?.close()
      await service?.stop()
      await host?.remove()
    })

    const open = async (width: number, height: number): Promise<Page> => {
      const page = await browser.newPage({ viewport: { width, height } })
      await page.goto(`${service.url}/dashboard`)
      await page.getByTestId('device-total').waitFor()
      return page
    }

    it('shows the fleet’s counts at /dashboard/fleet, health in words as well as colour', async () => {
      const page = await open(1280, 900)
      assert.equal(new URL(page.url()).pathname, '/dashboard/fleet')
      assert.equal(await page.getByTestId('device-total').textContent(), '2')
      const row = page.locator('tr[data-host="dash-host"]')
      assert.match((await row.textContent()) ?? '', /held/)
      assert.match((await row.locator('td').nth(2).textContent()) ?? '', /^2$/)
      const byHealth = new Map<string, number>()
      for (const d of devices) byHealth.set(d.health, (byHealth.get(d.health) ?? 0) + 1)
      for (const [health, n] of byHealth) {
        const entry = page.getByTestId('by-health').locator(`[data-value="${health}"]`)
        assert.equal(await entry.locator('dd').textContent(), String(n))
        assert.match((await entry.locator('dt').textContent()) ?? '', new RegExp(health))
      }
      assert.equal(
        await page.getByTestId('by-type').locator('[data-value="GPU"] dd').textContent(),
        '2',
      )
      const legend = page.locator('.capacity').first().locator('.legend')
      const buckets = await legend.locator('strong').allTextContents()
      assert.equal(
        buckets.map(Number).reduce((a, b) => a + b, 0),
        2,
      )
      // The title of a time holds its UTC value.
      assert.match((await row.locator('time').getAttribute('title')) ?? '', /Z \(UTC\)$/)
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-1280.png'), fullPage: true })
      // The keyboard reaches the skip link first.
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content')
      await page.close()
    })

    it('fits a phone, and axe-core finds no serious or critical violation', async () => {
      const page = await open(390, 844)
      const overflow = await page.evaluate('document.documentElement.scrollWidth > innerWidth')
      assert.equal(overflow, false, 'the page scrolls sideways on a phone')
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-phone.png'), fullPage: true })
      const axe = await readFile(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')
      await page.addScriptTag({ content: axe })
      // In the page: axe's own API, as its README shows it.
      const violations = await page.evaluate<{ id: string; impact: string }[]>(
        'axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))',
      )
      const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      assert.deepEqual(bad, [], JSON.stringify(violations))
      await page.close()
    })

    it('serves a first load under 150 KB of JavaScript, compressed', async () => {
      const res = await fetch(`${service.url}/dashboard/assets/app.js`)
      assert.equal(res.status, 200)
      const bytes = Buffer.from(await res.arrayBuffer())
      const gzipped = gzipSync(bytes).length
      console.log(`dashboard app.js: ${bytes.length} bytes, ${gzipped} gzipped`)
      assert.ok(gzipped < 150 * 1024, `${gzipped} bytes gzipped`)
    })
  })
