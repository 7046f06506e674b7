/**
 * The dashboard's Requests and Explain pages in a real browser (issue 32, docs/dashboard.md):
 * `cyborg up` on a fixture GPU host (two A100s). Before anything is made, each page says what to do
 * next. Then a device profile and three accelerator requests are made through the API: one bound
 * on the fixture host, one bound to a host that has no device (so it fails, with its reason), one
 * left Initial. The Requests page counts them as the API does, puts
 * its filters in the URL (Back and reload restore them) and shows the failed one's reason; one
 * request opens at its own URL. The Explain page shows the fixture host's GPU as a fit with its
 * free units, the profile and host in the URL. axe-core finds nothing serious or critical on
 * either, and neither scrolls sideways at 390 px. Screenshots go to test-artifacts/dashboard/.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { gpuHost, gpuHostEnv, type GpuHost } from '../support/gpu-host.js'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import { ROOT, startService, type RunningService } from '../support/service.js'
import { assertAccessible, assertNoSidewaysScroll } from '../support/web-checks.js'

const skip = await chromiumSkip()
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')
const HOST = 'req-host'
const PROFILE = 'dash-gpu'
const V = (minor: number) => ({
  'OpenStack-API-Version': `accelerator 2.${minor}`,
  'content-type': 'application/json',
})
const INSTANCE = (n: number) => `00000000-0000-4000-8000-00000000000${n}`

interface Arq {
  uuid: string
  state: string
  hostname: string | null
  state_reason?: string | null
}

interface Candidate {
  hostname: string
  rule: string
  free_units: number
}

const title = 'the dashboard’s Requests and Explain pages in headless chromium against cyborg up'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 240_000 }, () => {
    let host: GpuHost
    let service: RunningService
    let browser: Browser
    const api = async <T>(method: string, url: string, body?: unknown, minor = 10) => {
      const res = await fetch(`${service.url}${url}`, {
        method,
        headers: V(minor),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      const text = await res.text()
      assert.ok(res.ok, `${method} ${url}: ${res.status} ${text}`)
      return (text === '' ? undefined : JSON.parse(text)) as T
    }
    const listArqs = async () =>
      (await api<{ arqs: Arq[] }>('GET', '/v2/accelerator_requests')).arqs
    const bind = (uuid: string, hostname: string, instance: string) =>
      api('PATCH', '/v2/accelerator_requests', {
        [uuid]: [
          { path: '/hostname', op: 'add', value: hostname },
          { path: '/instance_uuid', op: 'add', value: instance },
        ],
      })

    /** The profile and the three requests, made once, by the first test that needs them. */
    let seeded: Promise<void> | undefined
    const seed = () =>
      (seeded ??= (async () => {
        await api('POST', '/v2/device_profiles', [
          { name: PROFILE, groups: [{ 'resources:PGPU': '1' }] },
        ])
        const made: Arq[] = []
        for (let i = 0; i < 3; i++)
          made.push(
            ...(await api<{ arqs: Arq[] }>('POST', '/v2/accelerator_requests', {
              device_profile_name: PROFILE,
            }))!.arqs,
          )
        await bind(made[0]!.uuid, HOST, INSTANCE(1))
        await bind(made[1]!.uuid, 'ghost-host', INSTANCE(2))
      })())

    before(async () => {
      host = await gpuHost(HOST)
      service = await startService({
        compiled: true,
        timeoutMs: 90_000,
        env: {
          ...gpuHostEnv(host),
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/devices`, { headers: V(6) })
          const devices = ((await r.json()) as { devices: { lifecycle: string }[] }).devices
          return r.ok && devices.length === 2 && devices.every((d) => d.lifecycle === 'active')
        },
      })
      browser = await launchChromium()
      await mkdir(ARTIFACTS, { recursive: true })
    })

    after(async () => {
      await browser?.close()
      await service?.stop()
      await host?.remove()
    })

    const open = async (url: string, width = 1280, height = 900): Promise<Page> => {
      const page = await browser.newPage({ viewport: { width, height } })
      await page.goto(`${service.url}${url}`)
      return page
    }
    const rows = (page: Page) => page.locator('table.arqs tbody tr')

    it('says what to do next while there is no profile and no request', async () => {
      const page = await open('/dashboard/explain')
      const none = page.getByRole('heading', { name: 'No device profiles yet' })
      await none.waitFor()
      assert.match(
        (await page.locator('main').textContent()) ?? '',
        /openstack accelerator device profile create/,
      )
      await page.screenshot({ path: path.join(ARTIFACTS, 'explain-empty.png'), fullPage: true })
      await page.goto(`${service.url}/dashboard/requests`)
      await page.getByRole('heading', { name: 'No accelerator requests' }).waitFor()
      await page.close()
    })

    it('counts the requests by state as the API does; a failed one shows ✕, its state and reason', async () => {
      await seed()
      const arqs = await listArqs()
      const page = await open('/dashboard/requests')
      await page.getByTestId('by-state').waitFor()
      const counts = new Map<string, number>()
      for (const a of arqs) counts.set(a.state, (counts.get(a.state) ?? 0) + 1)
      assert.equal(arqs.length, 3)
      for (const [state, n] of counts) {
        const entry = page.getByTestId('by-state').locator(`[data-state="${state}"] strong`)
        assert.equal(await entry.textContent(), String(n), state)
      }
      assert.equal(await rows(page).count(), 3)
      const failed = arqs.find((a) => a.hostname === 'ghost-host')!
      assert.equal(failed.state, 'BindFailed')
      assert.ok(failed.state_reason, 'the API gives the failed request a reason')
      const row = page.locator(`tr[data-uuid="${failed.uuid}"]`)
      assert.match((await row.locator('td').first().textContent()) ?? '', /✕ BindFailed/)
      assert.equal(await row.getByTestId('reason').textContent(), failed.state_reason)
      await page.screenshot({ path: path.join(ARTIFACTS, 'requests-1280.png'), fullPage: true })
      await page.close()
    })

    it('keeps a filter in the URL: Back removes it, Forward and a reload bring it back', async () => {
      await seed()
      const page = await open('/dashboard/requests')
      await page.getByTestId('by-state').waitFor()
      await page.selectOption('#f-state', 'BindFailed')
      await page.waitForURL(/\?state=BindFailed$/)
      assert.equal(await rows(page).count(), 1)
      assert.equal(await rows(page).first().getAttribute('data-state'), 'BindFailed')
      await page.goBack()
      await page.waitForURL((u) => u.search === '')
      assert.equal(await rows(page).count(), 3)
      assert.equal(await page.locator('#f-state').inputValue(), '')
      await page.goForward()
      await page.waitForURL(/\?state=BindFailed$/)
      await page.reload()
      await page.getByTestId('by-state').waitFor()
      assert.equal(await rows(page).count(), 1)
      assert.equal(await page.locator('#f-state').inputValue(), 'BindFailed')
      // The host filter: the fixture host's one request.
      await page.selectOption('#f-state', '')
      await page.selectOption('#f-host', HOST)
      await page.waitForURL(new RegExp(`\\?host=${HOST}$`))
      assert.equal(await rows(page).count(), 1)
      await page.close()
    })

    it('opens one request at /dashboard/requests/<uuid> with all its fields and reason', async () => {
      await seed()
      const failed = (await listArqs()).find((a) => a.state === 'BindFailed')!
      const page = await open('/dashboard/requests')
      await page.locator(`a[href="/dashboard/requests/${failed.uuid}"]`).click()
      await page.waitForURL(new RegExp(`/dashboard/requests/${failed.uuid}$`))
      await page.getByTestId('arq-fields').waitFor()
      const failure = (await page.getByTestId('failure').textContent()) ?? ''
      assert.ok(failure.includes(failed.state_reason!), failure)
      const field = (k: string) => page.locator(`[data-field="${k}"] dd`).textContent()
      assert.equal(await field('hostname'), 'ghost-host')
      assert.equal(await field('device_profile_name'), PROFILE)
      assert.equal(await field('instance_uuid'), INSTANCE(2))
      await page.screenshot({ path: path.join(ARTIFACTS, 'requests-detail.png'), fullPage: true })
      await page.goBack()
      await page.waitForURL(/\/dashboard\/requests$/)
      await page.close()
    })

    it('explains the profile on the fixture host: a fit with its free units, the choice in the URL', async () => {
      await seed()
      const answer = await api<{ groups: { candidates: Candidate[] }[] }>(
        'POST',
        `/v2/device_profiles/${PROFILE}/explain`,
        { hostname: HOST },
        6,
      )
      const fits = answer.groups[0]!.candidates.filter((c) => c.rule === 'fits')
      assert.ok(fits.length > 0, JSON.stringify(answer))
      const page = await open('/dashboard/explain')
      await page.selectOption('#x-profile', PROFILE)
      await page.fill('#x-host', HOST)
      // The hosts with devices are suggested.
      const suggested = page.locator('#x-hosts option')
      assert.equal(await suggested.count(), 1)
      assert.equal(await suggested.first().getAttribute('value'), HOST)
      await page.getByRole('button', { name: 'Explain' }).click()
      await page.waitForURL(new RegExp(`\\?profile=${PROFILE}&host=${HOST}$`))
      const check = async () => {
        const fitRows = page.locator(`tr[data-host="${HOST}"][data-rule="fits"]`)
        await fitRows.first().waitFor()
        assert.equal(await fitRows.count(), fits.length)
        assert.match((await fitRows.first().getByTestId('verdict').textContent()) ?? '', /✓ fits/)
        const free = await fitRows.getByTestId('free-units').allTextContents()
        assert.deepEqual(
          free,
          fits.map((c) => String(c.free_units)),
        )
      }
      await check()
      await page.screenshot({ path: path.join(ARTIFACTS, 'explain-1280.png'), fullPage: true })
      await page.reload()
      await check()
      assert.equal(await page.locator('#x-profile').inputValue(), PROFILE)
      assert.equal(await page.locator('#x-host').inputValue(), HOST)
      await page.goBack()
      await page.waitForURL(/\/dashboard\/explain$/)
      assert.equal(await page.getByTestId('explain-result').count(), 0)
      await page.close()
    })

    it('shows an error of the API in words', async () => {
      await seed()
      const page = await open('/dashboard/explain?profile=no-such-profile')
      const alert = page.getByRole('alert')
      await alert.waitFor()
      assert.match((await alert.textContent()) ?? '', /no-such-profile/)
      await page.close()
    })

    const failedUrl = async () =>
      `/dashboard/requests/${(await listArqs()).find((a) => a.state === 'BindFailed')!.uuid}`
    for (const [name, url, ready] of [
      ['requests', async () => '/dashboard/requests', 'by-state'],
      ['requests-detail', failedUrl, 'arq-fields'],
      [
        'explain',
        async () => `/dashboard/explain?profile=${PROFILE}&host=${HOST}`,
        'explain-result',
      ],
    ] as const)
      it(`the ${name} page fits a phone, and axe-core finds no serious or critical violation`, async () => {
        await seed()
        const page = await open(await url(), 390, 844)
        await page.getByTestId(ready).waitFor()
        await assertNoSidewaysScroll(page)
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-phone.png`), fullPage: true })
        await assertAccessible(page)
        await page.close()
      })
  })
