/**
 * Metrics across processes (issue 16): a real Prometheus scrapes `cyborg api` (on its own port), a
 * `cyborg conductor` and a `cyborg agent` (each on `[metrics] listen`), over RabbitMQ and
 * PostgreSQL, with the agent on a fixture host of two GPUs, one of them with uncorrectable ECC
 * errors. PromQL through Prometheus's HTTP API returns the host's devices by health and an HTTP
 * request counter that moves; `promtool check metrics` passes on each endpoint's output.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { testDialects, type TestDatabase } from '../support/db.js'
import {
  freePort,
  printed,
  runCommand,
  startService,
  type RunningService,
} from '../support/service.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { eventually } from '../support/host-inventory.js'
import { gpuHost, setEccErrors, type GpuHost } from '../support/gpu-host.js'
import {
  prometheusSkip,
  startPrometheus,
  type RunningPrometheus,
} from '../support/peers/prometheus.js'

const postgres = (await testDialects()).find((d) => d.name === 'postgres')
const broker = await testBroker()
const skip = postgres?.skip ?? broker.skip ?? (await prometheusSkip())

const title = 'Prometheus scrapes the api, a conductor and an agent; PromQL sees the fleet'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 180_000 }, () => {
    const id = randomBytes(3).toString('hex')
    let db: TestDatabase
    let vhost: TestVhost
    let prometheus: RunningPrometheus
    let host: GpuHost
    let env: Record<string, string>
    const services = new Map<string, RunningService>()
    const ports = new Map<string, number>()

    const start = async (name: string, extra: Record<string, string> = {}) => {
      const port = await freePort()
      ports.set(name, port)
      const service = await startService({
        command: [name],
        env: {
          ...env,
          CYBORG_METRICS__LISTEN: `127.0.0.1:${port}`,
          ...extra,
        },
        ready: name === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${name} is ready"`)),
        timeoutMs: 60_000,
      })
      services.set(name, service)
    }
    const target = (name: string) => `127.0.0.1:${ports.get(name)}`
    const value = async (promql: string) => {
      const [sample] = await prometheus.query(promql)
      assert.ok(sample, `${promql} has a value`)
      return Number(sample.value[1])
    }

    before(async () => {
      await Promise.all([
        postgres!.create().then((x) => (db = x)),
        broker.createVhost().then((x) => (vhost = x)),
        startPrometheus().then((x) => (prometheus = x)),
        gpuHost(`pm-${id}`).then((x) => (host = x)),
      ])
      await setEccErrors(host, '0000:3b:00.0', 2)
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__PERIODIC_INTERVAL: '1',
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '10',
        CYBORG_METRICS__FLEET_REFRESH_SECONDS: '1',
        CYBORG_LOG_LEVEL: 'info',
      }
    })

    after(async () => {
      for (const s of services.values()) if (s.child.exitCode === null) s.child.kill('SIGKILL')
      await Promise.all([...services.values()].map((s) => s.stop().catch(() => null)))
      await Promise.all([prometheus?.stop(), db?.close(), vhost?.drop(), host?.remove()])
    })

    void it('every process serves metrics that promtool accepts', async () => {
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      await start('conductor')
      await start('api')
      await start('agent', {
        CYBORG_DEFAULT__HOST: host.host,
        CYBORG_AGENT__HOST_ROOT: host.root,
        CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        PATH: `${host.bin}:${process.env.PATH ?? ''}`,
      })
      const urls = {
        api: `${services.get('api')!.url}/metrics`,
        'api listener': `http://${target('api')}/metrics`,
        conductor: `http://${target('conductor')}/metrics`,
        agent: `http://${target('agent')}/metrics`,
      }
      for (const [name, url] of Object.entries(urls)) {
        const res = await fetch(url)
        assert.equal(res.status, 200, name)
        const check = spawnSync('/usr/bin/promtool', ['check', 'metrics'], {
          input: await res.text(),
          encoding: 'utf8',
        })
        assert.equal(check.status, 0, `${name}: ${check.stdout}${check.stderr}`)
      }
    })

    void it('PromQL returns the fixture host’s devices by health, and a request counter that moved', async () => {
      const api = services.get('api')!.url
      await prometheus.scrape({
        api: new URL(api).host,
        conductor: target('conductor'),
        agent: target('agent'),
      })
      await eventually(async () => {
        const up = await prometheus.query('up')
        assert.deepEqual(up.map((s) => [s.metric.job, s.value[1]]).sort(), [
          ['agent', '1'],
          ['api', '1'],
          ['conductor', '1'],
        ])
      }, 30_000)
      const byHealth = await eventually(async () => {
        const rows = await prometheus.query(
          `sum by (health) (cyborg_devices{job="conductor",host="${host.host}"})`,
        )
        const counts = Object.fromEntries(rows.map((r) => [r.metric.health, r.value[1]]))
        assert.deepEqual(counts, { failed: '1', ok: '1' })
        return counts
      }, 30_000)
      assert.deepEqual(byHealth, { failed: '1', ok: '1' })

      const requests = `sum(cyborg_http_requests_total{job="api",route="/v2/devices",method="GET",status="200"})`
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${api}/v2/devices`)).status, 200)
      const first = await eventually(() => value(requests), 30_000)
      for (let i = 0; i < 5; i++) assert.equal((await fetch(`${api}/v2/devices`)).status, 200)
      await eventually(async () => assert.ok((await value(requests)) >= first + 5), 30_000)

      // The agent's and the conductor's own counters are there too.
      await eventually(async () => {
        assert.ok((await value('sum(cyborg_reports_total{job="agent",result="sent"})')) >= 1)
        assert.ok(
          (await value(
            'sum(cyborg_rpc_calls_total{job="conductor",method="reportInventory",outcome="ok"})',
          )) >= 1,
        )
      }, 30_000)
    })

    void it('SIGTERM stops every process with exit code 0', async () => {
      for (const [name, s] of services) assert.equal(await s.stop(), 0, `${name}:\n${s.output()}`)
    })
  })
