/** The API's metrics: requests counted by route template (never a uuid), and GET /metrics without a token. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createPrometheusMetrics } from '../../src/main/metrics/prometheus.js'
import { createTestApp, throwingConductor } from '../support/api-app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { createApp } from '../../src/api/app.js'
import { NotAuthenticatedError } from '../../src/domain/errors.js'

await test('requests are counted by route template; /metrics needs no token, everything else does', async () => {
  const base = await createTestApp()
  const metrics = createPrometheusMetrics({ processMetrics: false })
  // Keystone-like: every token is refused, so only public paths answer 200.
  const auth: Authenticator = {
    strategy: 'keystone',
    authenticate: () => {
      throw new NotAuthenticatedError('The request you have made requires authentication.')
    },
  }
  const app = await createApp(
    {
      db: base.db.db,
      conductor: throwingConductor(),
      log: base.app.log as never,
      metrics,
      exposition: metrics.expose,
    },
    { auth },
  )
  try {
    const uuid = '00000000-0000-4000-8000-000000000001'
    const device = await app.inject({ method: 'GET', url: `/v2/devices/${uuid}` })
    assert.notEqual(device.statusCode, 200)
    const res = await app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(res.statusCode, 200, res.body)
    assert.match(res.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/)
    assert.match(
      res.body,
      /cyborg_http_requests_total\{route="\/v2\/devices\/:uuid",method="GET",status="40\d"\} 1/,
    )
    assert.ok(!res.body.includes(uuid), 'no uuid is a label value')
    const unknown = await app.inject({ method: 'GET', url: `/no/such/${uuid}` })
    assert.equal(unknown.statusCode, 401, 'auth answers before routing')
    const again = await app.inject({ method: 'GET', url: '/metrics' })
    assert.match(again.body, /route="unmatched",method="GET",status="401"\} 1/)
  } finally {
    await app.close()
    await base.close()
  }
})

await test('without an exposition (metrics disabled) /metrics is a 404, and requests are still counted', async () => {
  const base = await createTestApp()
  const metrics = createPrometheusMetrics({ processMetrics: false })
  const app = await createApp({
    db: base.db.db,
    conductor: throwingConductor(),
    log: base.app.log as never,
    metrics,
  })
  try {
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
    const { body } = await metrics.expose()
    assert.match(body, /route="unmatched",method="GET",status="404"\} 1/)
  } finally {
    await app.close()
    await base.close()
  }
})
