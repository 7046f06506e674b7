/** The conductor's requests to Placement are counted by outcome and timed (cyborg_peer_request*). */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { loadConfig } from '../../src/config/config.js'
import { placementOptions } from '../../src/main/resources.js'
import { createPrometheusMetrics } from '../../src/main/metrics/prometheus.js'

await test('Placement calls are counted by outcome and timed', async () => {
  let answers = [200, 503]
  const server = createServer((_req, res) => {
    const status = answers.shift() ?? 404
    res.writeHead(status, { 'content-type': 'application/json' }).end('{"uuid": "x"}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const { port } = server.address() as { port: number }
  try {
    const config = loadConfig({
      files: [],
      env: {
        CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: `http://127.0.0.1:${port}`,
        CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
        CYBORG_PLACEMENT__TOKEN: 'admin',
      },
    })
    const metrics = createPrometheusMetrics({ processMetrics: false })
    const placement = placementOptions(config, metrics)!
    const uuid = '00000000-0000-4000-8000-000000000001'
    await placement.client.getProvider(uuid).catch(() => null)
    await placement.client.getProvider(uuid).catch(() => null)
    answers = []
    const { body } = await metrics.expose()
    assert.match(body, /^cyborg_peer_requests_total\{peer="placement",outcome="2xx"\} 1$/m)
    assert.match(body, /^cyborg_peer_requests_total\{peer="placement",outcome="5xx"\} \d+$/m)
    assert.match(body, /^cyborg_peer_request_duration_seconds_count\{peer="placement"\} \d+$/m)
  } finally {
    server.close()
  }
})
