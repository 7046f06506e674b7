/**
 * Debian's chromium (scripts/ci-services.sh installs it), driven by playwright-core through
 * `executablePath`: no browser is downloaded (`playwright install` is never run).
 */
import { access } from 'node:fs/promises'
import { chromium, type Browser } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Why the browser tests cannot run here, or undefined when they can. */
export async function chromiumSkip(): Promise<string | undefined> {
  try {
    await access(CHROMIUM)
    return undefined
  } catch {
    const why = 'chromium is not installed (run scripts/ci-services.sh chromium as root)'
    if (process.env.CYBORG_REQUIRE_SERVICES === '1')
      throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${why}`)
    return why
  }
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true })
}
