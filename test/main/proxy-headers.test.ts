/**
 * Forwarded headers through the real server and configuration (issue 27): ignored by default;
 * with `[oslo_middleware] enable_proxy_headers_parsing` believed only from `[api] trusted_proxies`.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startService } from '../support/service.js'

const forwarded = {
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'attacker.invalid',
  'x-forwarded-prefix': '/evil',
}

async function selfLink(env: Record<string, string>): Promise<string> {
  const service = await startService({ command: ['up'], env })
  try {
    const res = await fetch(`${service.url}/v2`, { headers: forwarded })
    assert.equal(res.status, 200)
    return ((await res.json()) as { links: { href: string }[] }).links[0]!.href
  } finally {
    assert.equal(await service.stop(), 0, service.output())
  }
}

void describe('X-Forwarded-* through cyborg up', () => {
  void it('are ignored by default, and from a peer not in [api] trusted_proxies', async () => {
    assert.match(await selfLink({}), /^http:\/\/127\.0\.0\.1:\d+\/v2\/$/)
    assert.match(
      await selfLink({
        CYBORG_OSLO_MIDDLEWARE__ENABLE_PROXY_HEADERS_PARSING: 'true',
        CYBORG_API__TRUSTED_PROXIES: '10.0.0.0/8',
      }),
      /^http:\/\/127\.0\.0\.1:\d+\/v2\/$/,
    )
  })

  void it('are believed when enabled, from a trusted proxy', async () => {
    assert.equal(
      await selfLink({ CYBORG_OSLO_MIDDLEWARE__ENABLE_PROXY_HEADERS_PARSING: 'true' }),
      'https://attacker.invalid/evil/v2/',
    )
  })
})
