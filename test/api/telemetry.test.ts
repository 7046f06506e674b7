/**
 * Device telemetry (issue 16): an agent with the fake driver publishes samples over the in-process
 * bus; the conductor's gauges (Prometheus, rebuilt from memory at each scrape) and the API's
 * `GET /v1/telemetry` both show them, labelled with the device's uuid, type and vendor from the
 * database. The conductor side's rules (a host's message replaces its samples, silent hosts and
 * devices removed from the database lose their series) run on a clock of the test's own.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { createApp } from '../../src/api/app.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { createDeviceTelemetry } from '../../src/conductor/device-telemetry.js'
import { startCore } from '../../src/main/core.js'
import { createPrometheusMetrics } from '../../src/main/metrics/prometheus.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { TELEMETRY_TOPIC } from '../../src/rpc/agent-rpc.js'
import { testDialects } from '../support/db.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { eventually } from '../core/helpers.js'

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

const FAKE_SAMPLES = {
  sample_utilization_ratio: '0.42',
  sample_temperature_celsius: '51',
  sample_counter_jobs: '7',
}

/** The lines of an exposition that are series of `metric` (not its HELP and TYPE). */
const seriesOf = (body: string, metric: string) =>
  body.split('\n').filter((l) => l.startsWith(`${metric}{`))

void describe('device telemetry over the bus', () => {
  void it('an agent with the fake driver feeds the conductor’s gauges and GET /v1/telemetry', async () => {
    const [sqlite] = await testDialects()
    const db = await sqlite!.create()
    const bus = createInProcessBus()
    const log = pino({ level: 'silent' })
    const metrics = createPrometheusMetrics({ processMetrics: false })
    const core = await startCore({
      db,
      bus,
      log,
      metrics,
      conductor: { saveIntervalMs: 1, fleetRefreshMs: 3_600_000 },
      agent: {
        host: 'node1',
        enabledDrivers: ['fake'],
        driverOptions: { fake: FAKE_SAMPLES },
        periodicIntervalMs: 100,
      },
    })
    const app = await createApp({
      db: db.db,
      conductor: core.conductorClient,
      log,
      telemetryBus: bus,
    })
    try {
      const uuid = await eventually(async () => {
        const [device] = await db.db.selectFrom('devices').select('uuid').execute()
        return device?.uuid
      })
      const labels = `host="node1",device="${uuid}",type="FPGA",vendor="0xABCD"`
      const body = await eventually(async () => {
        const { body: text } = await metrics.expose()
        return seriesOf(text, 'cyborg_device_utilization_ratio').length > 0 && text
      })
      assert.deepEqual(seriesOf(body, 'cyborg_device_utilization_ratio'), [
        `cyborg_device_utilization_ratio{${labels}} 0.42`,
      ])
      assert.deepEqual(seriesOf(body, 'cyborg_device_temperature_celsius'), [
        `cyborg_device_temperature_celsius{${labels}} 51`,
      ])
      assert.deepEqual(seriesOf(body, 'cyborg_device_counter'), [
        `cyborg_device_counter{${labels},name="jobs"} 7`,
      ])
      assert.deepEqual(seriesOf(body, 'cyborg_device_power_watts'), [])

      // A host the database does not know yet: the API shows it without a uuid.
      await bus.publish(TELEMETRY_TOPIC, {
        version: 2,
        host: 'node9',
        time: new Date().toISOString(),
        deviceCount: 1,
        drivers: [],
        periodMs: 60_000,
        devices: [{ controlPath: '0000:3b:00.0', values: { power_watts: 70.5 } }],
      })
      const listed = await eventually(async () => {
        const res = await app.inject({ method: 'GET', url: '/v1/telemetry' })
        assert.equal(res.statusCode, 200, res.body)
        const devices = (res.json() as Json).devices as Json[]
        return devices.length === 2 && devices
      })
      assert.deepEqual(
        listed.map((d) => [d.hostname, d.control_path, d.device_uuid, d.type, d.vendor]),
        [
          ['node1', '0000:0c:00.0', uuid, 'FPGA', '0xABCD'],
          ['node9', '0000:3b:00.0', null, null, null],
        ],
      )
      assert.deepEqual(listed[0]!.values, {
        utilization_ratio: 0.42,
        temperature_celsius: 51,
        counters: { jobs: 7 },
      })
      assert.ok(listed[0]!.age_seconds >= 0 && listed[0]!.age_seconds < 5)
      assert.ok(!Number.isNaN(Date.parse(listed[0]!.received_at)))
      const one = await app.inject({ method: 'GET', url: '/v1/telemetry?hostname=node9' })
      assert.deepEqual(
        ((one.json() as Json).devices as Json[]).map((d) => d.hostname),
        ['node9'],
      )
      const none = await app.inject({ method: 'GET', url: '/v1/telemetry?hostname=nowhere' })
      assert.deepEqual(none.json(), { devices: [] })
      const twice = await app.inject({ method: 'GET', url: '/v1/telemetry?hostname=a&hostname=b' })
      assert.equal(twice.statusCode, 400)
    } finally {
      await app.close()
      await core.stop()
      await bus.close()
      await db.close()
    }
    const { body } = await metrics.expose()
    assert.deepEqual(seriesOf(body, 'cyborg_device_utilization_ratio'), [], 'stopped: no series')
  })
})

void describe('the conductor’s device gauges', () => {
  void it('latest only, a device missing from its host’s next message or from the database loses its series, a silent host too', async () => {
    const [sqlite] = await testDialects()
    const db = await sqlite!.create()
    const bus = createInProcessBus()
    const log = pino({ level: 'silent' })
    const core = await startCore({ db, bus, log, conductor: { saveIntervalMs: 1 } })
    const report = async (count: number) => {
      const devices = Array.from({ length: count }, (_, n) => sampleDevice('node2', n))
      await core.conductorClient.reportInventory({
        host: 'node2',
        hash: inventoryHash(devices),
        devices,
        autoActivate: false,
      })
    }
    try {
      await report(3)
      const rows = await db.db
        .selectFrom('devices')
        .select(['uuid', 'cpid_info'])
        .orderBy('id')
        .execute()
      const uuids = rows.map((r) => r.uuid)
      let now = 1_000_000
      const metrics = createPrometheusMetrics({ processMetrics: false })
      const telemetry = createDeviceTelemetry(
        { db: db.db, metrics, log, now: () => now },
        { refreshMs: 60_000, missRefreshMs: 10_000, readBatchMs: 0 },
      )
      metrics.beforeExpose(() => telemetry.expose())
      const message = (paths: string[], power: number) => ({
        version: 2,
        host: 'node2',
        time: new Date(now).toISOString(),
        deviceCount: paths.length,
        drivers: [],
        periodMs: 60_000,
        devices: paths.map((controlPath) => ({ controlPath, values: { power_watts: power } })),
      })
      const power = async () =>
        seriesOf((await metrics.expose()).body, 'cyborg_device_power_watts')
          .map((l) => /device="([^"]+)".* (\S+)$/.exec(l)!.slice(1))
          .sort()
      const paths = ['0000:10:00.0', '0000:11:00.0', '0000:12:00.0']

      await telemetry.ingest(message(paths, 10))
      await telemetry.ingest(message(paths, 20))
      assert.deepEqual(await power(), uuids.map((u) => [u, '20']).sort(), 'latest sample only')

      await report(4)
      const added = (await db.db.selectFrom('devices').select('uuid').orderBy('id').execute())[3]!
      await telemetry.ingest(message([...paths, '0000:13:00.0'], 25))
      assert.equal((await power()).length, 3, 'a device not read yet has no series')
      now += 10_000
      await telemetry.ingest(message([...paths, '0000:13:00.0'], 25))
      assert.deepEqual(
        await power(),
        [...uuids, added.uuid].map((u) => [u, '25']).sort(),
        'a miss reads the host’s devices again',
      )

      now += 1000
      await telemetry.ingest(message(paths.slice(0, 2), 30))
      assert.deepEqual(
        await power(),
        uuids
          .slice(0, 2)
          .map((u) => [u, '30'])
          .sort(),
        'a device missing from the host’s message is dropped',
      )

      await report(1) // devices 1 and 2 leave the database
      now += 61_000
      await telemetry.ingest(message(paths.slice(0, 2), 40))
      assert.deepEqual(await power(), [[uuids[0], '40']], 'removed from the database: read again')

      now += 3 * 60_000 + 1
      assert.deepEqual(await power(), [], 'silent for three periods: dropped')

      await telemetry.ingest({ nonsense: true })
      await telemetry.ingest('x')
      assert.deepEqual(await power(), [])
    } finally {
      await core.stop()
      await bus.close()
      await db.close()
    }
  })
})
