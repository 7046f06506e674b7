/**
 * The Devices page and the device page in a real browser (issue 32, docs/dashboard.md): `cyborg up`
 * on a fixture host (two A100s, one with an uncorrectable ECC count) with a real Placement. The
 * table marks the unhealthy device and its reason, keeps its filter and sort in the URL (reload
 * and Back restore them), reads in pages; the device page shows the units, deployables and
 * attributes; Disable and Enable go through a confirmation, reach the API and Placement's
 * `reserved`; a bound unit shows in use with its request and instance. axe-core finds nothing
 * serious; nothing scrolls sideways at 390 px.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { gpuHost, gpuHostEnv, setEccErrors, type GpuHost } from '../support/gpu-host.js'
import { eventually } from '../support/host-inventory.js'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'
import { ROOT, startService, type RunningService } from '../support/service.js'
import { assertAccessible, assertNoSidewaysScroll } from '../support/web-checks.js'

const skip = await chromiumSkip()
const noPlacement = await placementSkip()
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')
const V25 = { 'OpenStack-API-Version': 'accelerator 2.5' }

interface Device {
  uuid: string
  status: string
  health: string
  health_reason: string | null
}

const title = 'the dashboard’s Devices and device pages in headless chromium against cyborg up'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 240_000 }, () => {
    let host: GpuHost
    let placement: RunningPlacement | undefined
    let service: RunningService
    let browser: Browser
    let sick: Device
    let well: Device

    const devices = async () => {
      const r = await fetch(`${service.url}/v2/devices?sort_key=uuid`, { headers: V25 })
      return ((await r.json()) as { devices: Device[] }).devices
    }
    /** Whether Placement holds the whole inventory of `device`'s deployable reserved. */
    const reserved = async (device: string): Promise<boolean> => {
      const r = await fetch(`${service.url}/v2/deployables`)
      const { deployables } = (await r.json()) as {
        deployables: { uuid: string; rp_uuid: string }[]
      }
      const handles = await fetch(`${service.url}/v2/devices/${device}/attach_handles`, {
        headers: { 'OpenStack-API-Version': 'accelerator 2.10' },
      })
      const [h] = ((await handles.json()) as { attach_handles: { deployable_uuid: string }[] })
        .attach_handles
      const d = deployables.find((x) => x.uuid === h!.deployable_uuid)!
      const inv = Object.values(await placement!.client.getInventories(d.rp_uuid))[0]!
      return inv.reserved === inv.total
    }

    before(async () => {
      const [h, p] = await Promise.all([
        gpuHost('devs-host'),
        noPlacement === undefined ? startPlacement() : undefined,
      ])
      host = h
      placement = p
      await setEccErrors(host, '0000:3b:00.0', 2)
      service = await startService({
        compiled: true,
        timeoutMs: 90_000,
        env: {
          ...gpuHostEnv(host),
          ...(placement === undefined
            ? {}
            : {
                CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: placement.url,
                CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
                CYBORG_PLACEMENT__TOKEN: 'admin',
                CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
              }),
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/devices`, { headers: V25 })
          const body = (await r.json()) as { devices: Device[] }
          const d = await fetch(`${url}/v2/deployables`)
          const ds = ((await d.json()) as { deployables: { rp_uuid: string | null }[] }).deployables
          return (
            r.ok &&
            body.devices.filter((x) => x.health !== 'unknown').length === 2 &&
            ds.length === 2 &&
            (placement === undefined || ds.every((x) => x.rp_uuid !== null))
          )
        },
      })
      const all = await devices()
      sick = all.find((d) => d.health === 'failed')!
      well = all.find((d) => d.health === 'ok')!
      assert.ok(sick && well, JSON.stringify(all))
      browser = await launchChromium()
      await mkdir(ARTIFACTS, { recursive: true })
    })

    after(async () => {
      await browser?.close()
      await service?.stop()
      await placement?.stop()
      await host?.remove()
    })

    const open = async (url: string, width = 1280, height = 900): Promise<Page> => {
      const page = await browser.newPage({ viewport: { width, height } })
      await page.goto(`${service.url}${url}`)
      return page
    }
    /** A page function: whether the table shows exactly devices `list`, in this order. */
    const rowsAre = (list: string[]) =>
      `JSON.stringify([...document.querySelectorAll('tbody tr[data-uuid]')].map((tr) => tr.dataset.uuid)) === '${JSON.stringify(list)}'`
    const rows = (page: Page) => page.locator('tbody tr[data-uuid]')
    const uuids = (page: Page) =>
      page
        .locator('tbody tr[data-uuid]')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-uuid')))

    it('shows both devices, the unhealthy one marked with its reason, and says the end is reached', async () => {
      const page = await open('/dashboard/devices')
      await page.getByTestId('devices-shown').filter({ hasText: 'end of the list' }).waitFor()
      assert.equal(await rows(page).count(), 2)
      const bad = page.locator(`tr[data-uuid="${sick.uuid}"]`)
      assert.equal(await bad.getAttribute('class'), 'row-bad')
      const text = (await bad.textContent()) ?? ''
      assert.match(text, /✕ failed/)
      assert.ok(sick.health_reason && text.includes(sick.health_reason), text)
      assert.match((await page.locator(`tr[data-uuid="${well.uuid}"]`).textContent()) ?? '', /✓ ok/)
      assert.match((await page.getByTestId('devices-shown').textContent()) ?? '', /^2 shown/)
      await page.screenshot({ path: path.join(ARTIFACTS, 'devices-1280.png'), fullPage: true })
      await page.close()
    })

    it('reads the list a page at a time (limit and marker)', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      const asked: string[] = []
      page.on('request', (r) => {
        if (r.url().includes('/v2/devices?')) asked.push(new URL(r.url()).search)
      })
      await page.goto(`${service.url}/dashboard/devices?limit=1`)
      await page.getByTestId('devices-shown').filter({ hasText: 'end of the list' }).waitFor()
      assert.equal(await rows(page).count(), 2)
      assert.equal(asked.length, 3, asked.join(' '))
      assert.ok(asked.every((q) => q.includes('limit=1')))
      assert.ok(asked[1]!.includes('marker='), asked[1])
      await page.close()
    })

    it('keeps a filter in the URL: it survives a reload, and Back returns to the whole table', async () => {
      const page = await open('/dashboard/devices')
      await rows(page).nth(1).waitFor()
      await page.getByLabel('Health').selectOption('failed')
      await page.waitForURL(/health=failed/)
      await page.waitForFunction(rowsAre([sick.uuid]))
      assert.deepEqual(await uuids(page), [sick.uuid])
      await page.reload()
      await page.waitForFunction(rowsAre([sick.uuid]))
      assert.deepEqual(await uuids(page), [sick.uuid])
      assert.equal(await page.getByLabel('Health').inputValue(), 'failed')
      await page.goBack()
      await rows(page).nth(1).waitFor()
      assert.equal(new URL(page.url()).search, '')
      assert.equal(await rows(page).count(), 2)
      await page.close()
    })

    it('sorts by a column through the URL', async () => {
      const page = await open('/dashboard/devices')
      await rows(page).nth(1).waitFor()
      const sorted = [sick.uuid, well.uuid].sort()
      await page.locator('button[data-sort="uuid"]').click()
      await page.waitForURL(/sort_key=uuid&sort_dir=asc/)
      await page.waitForFunction(rowsAre(sorted))
      assert.deepEqual(await uuids(page), sorted)
      await page.locator('button[data-sort="uuid"]').click()
      await page.waitForURL(/sort_dir=desc/)
      await page.waitForFunction(rowsAre([...sorted].reverse()))
      assert.deepEqual(await uuids(page), [...sorted].reverse())
      assert.equal(await page.locator('th[aria-sort="descending"]').count(), 1)
      await page.close()
    })

    it('opens a device from its row: fields, handles with states, deployables, attributes', async () => {
      const page = await open('/dashboard/devices')
      await page.locator(`tr[data-uuid="${sick.uuid}"] a`).click()
      await page.waitForURL(new RegExp(`/dashboard/devices/${sick.uuid}$`))
      await page.getByTestId('device-fields').waitFor()
      assert.match((await page.getByTestId('device-fields').textContent()) ?? '', /✕ failed/)
      const handle = page.getByTestId('handles').locator('tbody tr').first()
      await handle.waitFor()
      assert.equal(await handle.getAttribute('data-state'), 'free')
      assert.match((await handle.textContent()) ?? '', /free/)
      assert.match((await handle.textContent()) ?? '', /0000:3b:00\.0/)
      await page.getByTestId('deployables').waitFor()
      assert.equal(await page.getByTestId('deployables').locator('tbody tr').count(), 1)
      await page.getByTestId('attributes').waitFor()
      assert.ok((await page.getByTestId('attributes').locator('dt').count()) > 0)
      await page.getByTestId('health-history').waitFor()
      await page.getByTestId('custody').waitFor()
      await page.screenshot({ path: path.join(ARTIFACTS, 'device-1280.png'), fullPage: true })
      await page.close()
    })

    it('disables through a confirmation (Cancel and Escape change nothing), then enables', async () => {
      const page = await open(`/dashboard/devices/${well.uuid}`)
      const disable = page.locator('button[data-action="disable"]')
      await disable.waitFor()
      const dialog = page.locator('dialog')
      // Cancel: the dialog closes, focus returns, nothing changes.
      await disable.click()
      await dialog.locator('[data-cancel]').waitFor()
      assert.equal(await page.evaluate('!!document.activeElement?.closest("dialog")'), true)
      assert.match((await dialog.textContent()) ?? '', /Placement reserves/)
      await dialog.locator('[data-cancel]').click()
      assert.equal(await dialog.isVisible(), false)
      assert.equal(await page.evaluate('document.activeElement?.dataset.action'), 'disable')
      // Escape cancels too.
      await disable.click()
      await dialog.locator('[data-cancel]').waitFor()
      await page.keyboard.press('Escape')
      assert.equal(await dialog.isVisible(), false)
      assert.equal((await devices()).find((d) => d.uuid === well.uuid)!.status, 'enabled')
      if (placement) assert.equal(await reserved(well.uuid), false)
      // Confirm.
      await disable.click()
      await dialog.locator('[data-confirm]').click()
      await page.getByTestId('action-result').getByText('Disable: done.').waitFor()
      assert.equal((await devices()).find((d) => d.uuid === well.uuid)!.status, 'maintaining')
      if (placement) assert.equal(await reserved(well.uuid), true)
      const enable = page.locator('button[data-action="enable"]')
      await enable.waitFor()
      await enable.click()
      await dialog.locator('[data-confirm]').click()
      await page.getByTestId('action-result').getByText('Enable: done.').waitFor()
      assert.equal((await devices()).find((d) => d.uuid === well.uuid)!.status, 'enabled')
      if (placement) assert.equal(await reserved(well.uuid), false)
      await page.locator('button[data-action="disable"]').waitFor()
      await page.close()
    })

    it('shows a bound unit in use, with its request and instance', async () => {
      const post = async (p: string, body: unknown, method = 'POST') => {
        const r = await fetch(`${service.url}${p}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        const text = await r.text()
        assert.ok(r.ok, `${method} ${p}: ${r.status} ${text}`)
        return text === '' ? undefined : (JSON.parse(text) as unknown)
      }
      await post('/v2/device_profiles', [{ name: 'devs-gpu', groups: [{ 'resources:PGPU': '1' }] }])
      const created = (await post('/v2/accelerator_requests', {
        device_profile_name: 'devs-gpu',
      })) as { arqs: { uuid: string }[] }
      const arq = created.arqs[0]!.uuid
      const instance = randomUUID()
      await post(
        '/v2/accelerator_requests',
        {
          [arq]: [
            { path: '/hostname', op: 'add', value: host.host },
            { path: '/instance_uuid', op: 'add', value: instance },
          ],
        },
        'PATCH',
      )
      const bound = await eventually(async () => {
        const r = await fetch(`${service.url}/v2/accelerator_requests/${arq}`)
        const view = (await r.json()) as { state: string; attach_handle_info: unknown }
        assert.ok(view.state === 'Bound' || view.state === 'BindFailed', view.state)
        return view
      })
      assert.equal(bound.state, 'Bound', JSON.stringify(bound))
      // The healthy GPU holds it: the failed one is fenced.
      const page = await open(`/dashboard/devices/${well.uuid}`)
      const handle = page.getByTestId('handles').locator('tbody tr').first()
      await handle.waitFor()
      assert.equal(await handle.getAttribute('data-state'), 'in_use')
      const text = (await handle.textContent()) ?? ''
      assert.match(text, /in use/)
      assert.ok(text.includes(arq) && text.includes(instance), text)
      await page.screenshot({
        path: path.join(ARTIFACTS, 'device-in-use-1280.png'),
        fullPage: true,
      })
      await page.close()
    })

    for (const [name, url] of [
      ['devices', '/dashboard/devices'],
      ['device', '/dashboard/devices/'],
    ] as const) {
      it(`the ${name} page fits a phone, and axe-core finds no serious or critical violation`, async () => {
        const page = await open(name === 'device' ? `${url}${sick.uuid}` : url, 390, 844)
        await page
          .locator(name === 'device' ? '[data-testid="handles"]' : 'tbody tr')
          .first()
          .waitFor()
        await assertNoSidewaysScroll(page)
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-phone.png`), fullPage: true })
        await assertAccessible(page)
        await page.close()
      })
    }
  })
