/**
 * The dashboard in a real browser (issue 32, docs/dashboard.md): `cyborg up` on a fixture host
 * (two A100s, nvidia-gpu/ecc, one with an uncorrectable ECC count), the Fleet page opened in
 * Debian's headless chromium. It shows the counts the API holds, at its own URL, with health in
 * words and not colour alone; its script is under budget; axe-core finds nothing serious or
 * critical. Screenshots go to test-artifacts/dashboard/.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import { gpuHost, gpuHostEnv, setEccErrors, type GpuHost } from '../support/gpu-host.js'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import { ROOT, startService, type RunningService } from '../support/service.js'
import { assertAccessible, assertNoSidewaysScroll } from '../support/web-checks.js'

const skip = await chromiumSkip()
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')
const V26 = { 'OpenStack-API-Version': 'accelerator 2.6' }

interface Device {
  uuid: string
  type: string
  health: string
  health_reason: string | null
}

const title = 'the dashboard’s Fleet page in headless chromium against cyborg up'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 180_000 }, () => {
    let host: GpuHost
    let service: RunningService
    let browser: Browser
    let devices: Device[]

    let policyFile: string

    before(async () => {
      host = await gpuHost('dash-host')
      // The defaults; the last case forbids GET /v1/status here and reloads it (SIGHUP).
      policyFile = path.join(host.root, 'policy.yaml')
      await writeFile(policyFile, '# the defaults\n')
      await setEccErrors(host, '0000:3b:00.0', 2)
      service = await startService({
        compiled: true,
        timeoutMs: 90_000,
        env: {
          ...gpuHostEnv(host),
          CYBORG_OSLO_POLICY__POLICY_FILE: policyFile,
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
      await assertNoSidewaysScroll(page)
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-phone.png'), fullPage: true })
      await assertAccessible(page)
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

    it('lists the unhealthy device with its reason, since when, and a link to its page', async () => {
      const page = await open(1280, 900)
      const bad = devices.filter((d) => d.health !== 'ok')
      assert.ok(bad.length > 0, 'the fixture has an unhealthy device')
      assert.equal(await page.getByTestId('unhealthy-total').textContent(), String(bad.length))
      for (const d of bad) {
        const row = page.getByTestId('unhealthy').locator(`tr[data-device="${d.uuid}"]`)
        const text = (await row.textContent()) ?? ''
        assert.match(text, new RegExp(`✕\\s*${d.health}`))
        assert.ok(d.health_reason && text.includes(d.health_reason), text)
        assert.match((await row.locator('time').getAttribute('title')) ?? '', /Z \(UTC\)$/)
        const link = row.getByRole('link')
        assert.equal(await link.getAttribute('href'), `/dashboard/devices/${d.uuid}`)
      }
      // The link moves within the page; Back returns to the fleet.
      await page.getByTestId('unhealthy').getByRole('link').first().click()
      await page.waitForURL(`**/dashboard/devices/${bad[0]!.uuid}`)
      await page.goBack()
      await page.getByTestId('device-total').waitFor()
      assert.equal(new URL(page.url()).pathname, '/dashboard/fleet')
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-unhealthy.png'), fullPage: true })
      await page.close()
    })

    it('filters the hosts by name, the filter in the URL', async () => {
      const page = await open(1280, 900)
      await page.getByLabel('Filter hosts by name').fill('no-such')
      await page.waitForURL('**/dashboard/fleet?host=no-such')
      assert.equal(await page.locator('tr[data-host]').count(), 0)
      await page.getByLabel('Filter hosts by name').fill('dash')
      await page.waitForURL('**/dashboard/fleet?host=dash')
      assert.equal(await page.locator('tr[data-host="dash-host"]').count(), 1)
      await page.reload()
      await page.getByTestId('device-total').waitFor()
      assert.equal(await page.getByLabel('Filter hosts by name').inputValue(), 'dash')
      await page.close()
    })

    // The "within 2 s, no reload", through the event stream.
    it('turns a fenced device red with its reason within 2 s, with no reload', async () => {
      const page = await open(1280, 900)
      await page.getByTestId('live-state').filter({ hasText: 'live' }).waitFor()
      await page.evaluate('window.sameDocument = true')
      const before = Number(await page.getByTestId('unhealthy-total').textContent())
      await setEccErrors(host, '0000:d8:00.0', 3)
      const res = await fetch(`${service.url}/v1/discovery`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ hostname: host.host }),
      })
      assert.equal(res.status, 200, await res.text())
      const summary = await fetch(`${service.url}/v2/devices/summary`, {
        headers: { 'OpenStack-API-Version': 'accelerator 2.10' },
      })
      const { unhealthy } = (await summary.json()) as { unhealthy: { total: number } }
      assert.equal(unhealthy.total, before + 1, 'the API holds the fence')
      await page.waitForFunction(
        `document.querySelector('[data-testid="unhealthy-total"]')?.textContent === '${before + 1}'`,
        null,
        { timeout: 2000 },
      )
      assert.equal(await page.evaluate('window.sameDocument'), true, 'the page was reloaded')
      const reasons = await page.getByTestId('unhealthy').locator('td.reason').allTextContents()
      assert.ok(
        reasons.every((r) => /ECC/.test(r)),
        reasons.join(' | '),
      )
      await page.close()
    })

    // Last: it changes the policy of the running service.
    it('shows the hosts without their lease when policy refuses GET /v1/status', async () => {
      await writeFile(policyFile, '"cyborg:status:get": "!"\n')
      service.child.kill('SIGHUP')
      for (let i = 0; (await fetch(`${service.url}/v1/status`)).status !== 403; i++) {
        assert.ok(i < 100, 'the policy was not reloaded')
        await new Promise((r) => setTimeout(r, 100))
      }
      const page = await open(1280, 900)
      const row = page.locator('tr[data-host="dash-host"]')
      assert.match((await row.textContent()) ?? '', /lease: not visible to you/)
      assert.match(
        (await page.getByTestId('lease-refused').textContent()) ?? '',
        /cyborg:status:get/,
      )
      assert.equal(await page.getByTestId('device-total').textContent(), '2')
      assert.equal(await page.getByRole('alert').count(), 0)
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-no-leases.png'), fullPage: true })
      await page.close()
    })
  })
