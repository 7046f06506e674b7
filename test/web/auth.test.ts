/**
 * The dashboard's login in a real browser (docs/dashboard.md, "Auth"): `cyborg up` with
 * `[api] auth_strategy = keystone` against a real Keystone; the page asks for a login, a reader
 * logs in through the API (the browser never talks to Keystone), sees what a reader may see
 * (refusals as messages), the token is nowhere in the page, its storage or its cookies, and
 * Log out brings the form back. Screenshots go to test-artifacts/dashboard/login-*.png; axe-core
 * checks the form.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { chromiumSkip, launchChromium } from '../support/peers/chromium.js'
import {
  createPersonas,
  keystoneSkip,
  startKeystone,
  USER_PASSWORD,
  type Personas,
  type RunningKeystone,
} from '../support/peers/keystone.js'
import { ROOT, startService, type RunningService } from '../support/service.js'
import { assertAccessible, assertNoSidewaysScroll } from '../support/web-checks.js'

const skip = (await chromiumSkip()) ?? (await keystoneSkip())
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard')
const PREFIX = 'web'

const title = 'the dashboard’s Keystone login in headless chromium against cyborg up'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 240_000 }, () => {
    let ks: RunningKeystone
    let people: Personas
    let service: RunningService
    let browser: Browser
    let context: BrowserContext
    let page: Page
    const tokens: string[] = []

    before(async () => {
      ks = await startKeystone()
      people = await createPersonas(ks, PREFIX)
      const admin = await people.token('admin')
      service = await startService({
        compiled: true,
        timeoutMs: 90_000,
        env: {
          CYBORG_DEFAULT__HOST: 'auth-host',
          CYBORG_AGENT__AUTO_ACTIVATE: 'true',
          CYBORG_API__AUTH_STRATEGY: 'keystone',
          CYBORG_KEYSTONE_AUTHTOKEN__AUTH_URL: ks.url,
          CYBORG_KEYSTONE_AUTHTOKEN__USERNAME: people.apiUser.username,
          CYBORG_KEYSTONE_AUTHTOKEN__PASSWORD: people.apiUser.password,
          CYBORG_KEYSTONE_AUTHTOKEN__PROJECT_NAME: people.apiUser.projectName,
        },
        ready: async (url) => {
          const r = await fetch(`${url}/v2/devices`, { headers: { 'x-auth-token': admin } })
          return r.ok && ((await r.json()) as { devices: unknown[] }).devices.length > 0
        },
      })
      browser = await launchChromium()
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      page = await context.newPage()
      await mkdir(ARTIFACTS, { recursive: true })
    })

    after(async () => {
      await browser?.close()
      await service?.stop()
      await ks?.stop()
    })

    const fill = async (username: string, password: string) => {
      await page.getByLabel('User name', { exact: true }).fill(username)
      await page.getByLabel('Password', { exact: true }).fill(password)
      await page.getByLabel('Project', { exact: true }).fill(people.projectNames.main)
    }

    it('asks for a login when the API answers 401; axe finds nothing serious on the form', async () => {
      await page.goto(`${service.url}/dashboard`)
      await page.getByRole('heading', { name: 'Log in' }).waitFor()
      assert.equal(await page.getByRole('button', { name: 'Log in' }).count(), 1)
      assert.equal(
        await page.getByLabel('User name', { exact: true }).count(),
        1,
        'one login form, not one per read',
      )
      await page.screenshot({ path: path.join(ARTIFACTS, 'login-form.png'), fullPage: true })
      await assertAccessible(page)
      await page.setViewportSize({ width: 390, height: 844 })
      await assertNoSidewaysScroll(page)
      await page.screenshot({ path: path.join(ARTIFACTS, 'login-phone.png'), fullPage: true })
      await page.setViewportSize({ width: 1280, height: 900 })
    })

    it('says a refused login is refused, without saying which part, and clears the password', async () => {
      await fill(`${PREFIX}-reader`, 'not-the-password')
      await page.getByRole('button', { name: 'Log in' }).click()
      const alert = page.locator('.login [role="alert"]')
      await alert.waitFor()
      assert.match((await alert.textContent()) ?? '', /the user name, password or project is wrong/)
      assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '')
      await page.screenshot({ path: path.join(ARTIFACTS, 'login-refused.png'), fullPage: true })
    })

    it('logs a reader in: who is shown, never the token; the Fleet page shows what a reader may see', async () => {
      await fill(`${PREFIX}-reader`, USER_PASSWORD)
      const answer = page.waitForResponse((r) => r.url().endsWith('/dashboard/login'))
      await page.getByRole('button', { name: 'Log in' }).click()
      const res = await answer
      assert.equal(res.status(), 200)
      const token = ((await res.json()) as { token: string }).token
      tokens.push(token)
      const who = page.getByTestId('who')
      await who.filter({ hasText: `${PREFIX}-reader` }).waitFor()
      assert.match((await who.textContent()) ?? '', new RegExp(people.projectNames.main))
      // The Fleet page: a reader may not list the hosts (cyborg:status:get) nor the devices
      // (cyborg:device:get_all): a refusal in words, not a crash, and no login form again.
      const refusal = page.locator('main [role="alert"]')
      await refusal.first().waitFor()
      assert.match((await refusal.first().textContent()) ?? '', /403|Policy doesn.t allow/)
      assert.equal(await page.getByLabel('User name', { exact: true }).count(), 0)
      await page.screenshot({ path: path.join(ARTIFACTS, 'login-reader.png'), fullPage: true })

      const html = await page.evaluate('document.documentElement.outerHTML')
      assert.ok(!String(html).includes(token), 'the token is in the page')
      assert.ok(!String(html).includes(USER_PASSWORD), 'the password is in the page')
      const stored = await page.evaluate(
        'JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])',
      )
      assert.equal(stored, '[[],[],""]')
      assert.deepEqual(await context.cookies(), [])
    })

    it('logs out: the token is forgotten and the form comes back', async () => {
      await page.getByRole('button', { name: 'Log out' }).click()
      await page.getByRole('heading', { name: 'Log in' }).waitFor()
      assert.equal(await page.getByRole('button', { name: 'Log out' }).count(), 0)
      await page.screenshot({ path: path.join(ARTIFACTS, 'login-out.png'), fullPage: true })
    })

    it('takes a pasted token instead, and shows whose it is', async () => {
      const token = await people.token('admin')
      tokens.push(token)
      await page.getByText('Or paste a Keystone token').click()
      await page.getByLabel('Keystone token', { exact: true }).fill(token)
      await page.getByRole('button', { name: 'Use token' }).click()
      await page
        .getByTestId('who')
        .filter({ hasText: `${PREFIX}-admin` })
        .waitFor()
      // An admin may read the whole fleet.
      await page.getByTestId('device-total').waitFor()
      const html = await page.evaluate('document.documentElement.outerHTML')
      assert.ok(!String(html).includes(token), 'the pasted token is in the page')
      await page.getByRole('button', { name: 'Log out' }).click()
      await page.getByRole('heading', { name: 'Log in' }).waitFor()
    })

    it('offers the admin actions by policy: a project manager reads the device but may not act', async () => {
      const admin = await people.token('admin')
      const list = await fetch(`${service.url}/v2/devices`, { headers: { 'x-auth-token': admin } })
      const uuid = ((await list.json()) as { devices: { uuid: string }[] }).devices[0]!.uuid
      const actions = ['Disable', 'Enable', 'Mark ready', 'Clean']
      const asWho = async (who: 'manager' | 'admin') => {
        const token = await people.token(who)
        tokens.push(token)
        await page.goto(`${service.url}/dashboard/devices/${uuid}`)
        await page.getByText('Or paste a Keystone token').click()
        await page.getByLabel('Keystone token', { exact: true }).fill(token)
        await page.getByRole('button', { name: 'Use token' }).click()
        await page
          .getByTestId('who')
          .filter({ hasText: `${PREFIX}-${who}` })
          .waitFor()
        // The device's own fields are drawn (cyborg:device:get_one allows a manager).
        await page.getByText(uuid).first().waitFor()
      }
      await asWho('manager')
      // The session is known once the badge shows the user: only then would actions appear.
      for (const name of actions)
        assert.equal(await page.getByRole('button', { name: `${name}…` }).count(), 0, name)
      await page.screenshot({ path: path.join(ARTIFACTS, 'device-manager.png'), fullPage: true })
      // The API refuses the action anyway.
      const managerToken = tokens[tokens.length - 1]!
      const refused = await fetch(`${service.url}/v2/devices/${uuid}/disable`, {
        method: 'POST',
        headers: { 'x-auth-token': managerToken },
      })
      assert.equal(refused.status, 403)
      await page.getByRole('button', { name: 'Log out' }).click()
      await page.getByRole('heading', { name: 'Log in' }).waitFor()
      await asWho('admin')
      await page.getByRole('button', { name: 'Disable…', exact: true }).waitFor()
      await page.getByRole('button', { name: 'Log out' }).click()
      await page.getByRole('heading', { name: 'Log in' }).waitFor()
    })

    it('never logs the password or the token', () => {
      const out = service.output()
      assert.ok(!out.includes(USER_PASSWORD), 'a password is in the service’s output')
      for (const t of tokens) assert.ok(!out.includes(t), 'a token is in the service’s output')
    })
  })
