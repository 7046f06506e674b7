import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { METRICS, type MetricName } from '../../domain/metrics.js'
import { createPrometheusMetrics, toOpenMetrics, wantsOpenMetrics } from './prometheus.js'

const PROMTOOL = '/usr/bin/promtool'

/** A registry with a sample of each kind, as a process would have after some work. */
function busy() {
  const m = createPrometheusMetrics()
  m.inc('cyborg_http_requests_total', { route: '/v2/devices/:uuid', method: 'GET', status: '200' })
  m.observe('cyborg_http_request_duration_seconds', 0.004, { route: '/v2/devices', method: 'GET' })
  m.inc('cyborg_rpc_calls_total', { service: 'conductor', method: 'heartbeat', outcome: 'ok' })
  m.observe('cyborg_db_commit_batch_size', 12)
  m.inc('cyborg_lease_fences_total', {}, 3)
  m.replace('cyborg_devices', [
    {
      labels: { type: 'GPU', host: 'h1', lifecycle: 'active', status: 'enabled', health: 'ok' },
      value: 2,
    },
    {
      labels: { type: 'GPU', host: 'h2', lifecycle: 'active', status: 'enabled', health: 'failed' },
      value: 1,
    },
  ])
  return m
}

void describe('prometheus metrics', () => {
  void it('exposes every metric of the catalog, with its help, in the classic text format', async () => {
    const { contentType, body } = await busy().expose('*/*')
    assert.match(contentType, /^text\/plain; version=0\.0\.4/)
    for (const [name, spec] of Object.entries(METRICS) as [
      MetricName,
      (typeof METRICS)[MetricName],
    ][])
      assert.ok(
        body.includes(`# TYPE ${name} ${spec.type}\n`),
        `${name} is exposed as a ${spec.type}`,
      )
    assert.match(body, /^cyborg_lease_fences_total 3$/m)
    assert.match(body, /^process_cpu_seconds_total /m, 'process metrics too')
  })

  void it(
    'passes promtool check metrics',
    {
      skip:
        !existsSync(PROMTOOL) &&
        process.env.CYBORG_REQUIRE_SERVICES !== '1' &&
        'promtool is not installed',
    },
    async () => {
      const { body } = await busy().expose()
      const run = spawnSync(PROMTOOL, ['check', 'metrics'], { input: body, encoding: 'utf8' })
      assert.equal(run.status, 0, `${run.stdout}${run.stderr}`)
    },
  )

  void it('replace drops the series it does not list', async () => {
    const m = busy()
    m.replace('cyborg_devices', [
      {
        labels: { type: 'GPU', host: 'h1', lifecycle: 'active', status: 'enabled', health: 'ok' },
        value: 2,
      },
    ])
    const { body } = await m.expose()
    assert.doesNotMatch(body, /host="h2"/)
  })

  void it('serves OpenMetrics to a scraper that asks for it', async () => {
    const accept = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3'
    assert.ok(wantsOpenMetrics(accept))
    assert.ok(!wantsOpenMetrics('text/plain'))
    assert.ok(!wantsOpenMetrics(undefined))
    const { contentType, body } = await busy().expose(accept)
    assert.match(contentType, /^application\/openmetrics-text; version=1\.0\.0/)
    assert.match(body, /# TYPE cyborg_http_requests counter\n/)
    assert.match(body, /^cyborg_http_requests_total\{/m)
    assert.match(body, /# TYPE cyborg_devices gauge\n/)
    assert.ok(body.endsWith('\n# EOF\n'))
    assert.doesNotMatch(body, /\n\n/)
    assert.equal(
      toOpenMetrics('# HELP a_total A.\n# TYPE a_total counter\na_total 1\n'),
      '# HELP a A.\n# TYPE a counter\na_total 1\n# EOF\n',
    )
  })
})
