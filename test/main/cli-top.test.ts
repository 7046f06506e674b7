/**
 * `cyborg top` against an in-process stack (SQLite, the in-process bus, a conductor and an agent
 * with the fake driver reporting samples, the API listening on a free port): the built command
 * prints the table once with `--once` (and without a terminal), JSON with `--format json`; on a
 * terminal it redraws in place until interrupted (runTop with a test terminal).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { startCore, type Core } from '../../src/main/core.js'
import { CLEAR_SCREEN, runTop } from '../../src/cli/top-commands.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { cyborg } from '../support/cli.js'
import { eventually } from '../core/helpers.js'

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

describe('cyborg top', () => {
  let db: TestDatabase
  let bus: MessageBus
  let core: Core
  let app: FastifyInstance
  let url: string

  before(async () => {
    const [sqlite] = await testDialects()
    db = await sqlite!.create()
    bus = createInProcessBus()
    const log = pino({ level: 'silent' })
    core = await startCore({
      db,
      bus,
      log,
      conductor: { saveIntervalMs: 1 },
      agent: {
        host: 'top-host',
        enabledDrivers: ['fake'],
        driverOptions: {
          fake: {
            sample_utilization_ratio: '0.42',
            sample_memory_used_bytes: String(3 * 1024 ** 3),
            sample_memory_total_bytes: String(16 * 1024 ** 3),
            sample_temperature_celsius: '51',
            sample_power_watts: '88.5',
          },
        },
        periodicIntervalMs: 200,
      },
    })
    app = await createApp({ db: db.db, conductor: core.conductorClient, log, telemetryBus: bus })
    url = await app.listen({ host: '127.0.0.1', port: 0 })
    await eventually(async () => {
      const res = await app.inject({ method: 'GET', url: '/v1/telemetry' })
      const devices = (res.json() as Json).devices as Json[]
      return devices.length === 1 && devices[0]!.device_uuid !== null
    })
  })
  after(async () => {
    await app.close()
    await core.stop()
    await bus.close()
    await db.close()
  })

  it('--once prints the table of every device, once', async () => {
    const run = await cyborg(['top', '--once'], { CYBORG_URL: url })
    assert.equal(run.code, 0, run.stderr)
    assert.equal(run.stderr, '')
    const lines = run.stdout.trimEnd().split('\n')
    assert.equal(lines.length, 3, run.stdout)
    assert.match(
      lines[0]!,
      /^Host +Device +Type +Vendor +Util +Memory +Temp +Power +ECC c\/u +Wear +Age$/,
    )
    const [uuid] = await db.db.selectFrom('devices').select('uuid').execute()
    assert.match(
      lines[2]!,
      new RegExp(
        `^top-host +${uuid!.uuid} +FPGA +0xABCD +42% +3\\.0/16\\.0 GiB +51 C +88\\.5 W +- +- +\\d+s$`,
      ),
    )
    assert.ok(!run.stdout.includes(CLEAR_SCREEN), 'no terminal: no escape codes')
  })

  it('--host and --format json; an unknown host shows nothing', async () => {
    const run = await cyborg(['top', '--host', 'top-host', '--format', 'json'], { CYBORG_URL: url })
    assert.equal(run.code, 0, run.stderr)
    const body = JSON.parse(run.stdout) as Json
    assert.deepEqual(
      body.devices.map((d: Json) => [d.hostname, d.control_path, d.values.power_watts]),
      [['top-host', '0000:0c:00.0', 88.5]],
    )
    const none = await cyborg(['top', '--host', 'elsewhere'], { CYBORG_URL: url })
    assert.equal(none.code, 0, none.stderr)
    assert.equal(none.stdout.trimEnd().split('\n').length, 2, 'headers only')
    const bad = await cyborg(['top', '--interval', '0'], { CYBORG_URL: url })
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /^cyborg top: --interval must be a number of seconds/)
  })

  it('on a terminal it redraws in place every interval until interrupted', async () => {
    const screens: string[] = []
    const controller = new AbortController()
    await runTop(
      { url, format: 'table', interval: '0.2' },
      {
        isTTY: true,
        write: (text) => void screens.push(text),
        signal: controller.signal,
        now: () => new Date('2026-01-02T03:04:05.000Z'),
        sleep: async (ms) => {
          assert.equal(ms, 200)
          if (screens.length === 3) controller.abort()
        },
      },
    )
    assert.equal(screens.length, 3)
    for (const screen of screens) {
      assert.ok(screen.startsWith(CLEAR_SCREEN))
      assert.match(screen, /cyborg top: 1 devices on 1 hosts, every 0\.2 s \(Ctrl-C to quit\)/)
      assert.match(screen, /\ntop-host +\S+ +FPGA +0xABCD +42%/)
    }
    // The API gone: the error is shown in place, and the loop carries on until interrupted.
    const down = new AbortController()
    const shown: string[] = []
    await runTop(
      { url: 'http://127.0.0.1:9', format: 'table', interval: '1' },
      {
        isTTY: true,
        write: (text) => void shown.push(text),
        signal: down.signal,
        now: () => new Date(),
        sleep: async () => down.abort(),
      },
    )
    assert.equal(shown.length, 1)
    // Refused: redrawing would not help, so it ends (exit code 1 through the action wrapper).
    const refusing = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          error_message: JSON.stringify({
            faultstring: 'Policy does not allow cyborg:telemetry:get to be performed.',
          }),
        }),
      )
    })
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve))
    const { port } = refusing.address() as AddressInfo
    try {
      await assert.rejects(
        runTop(
          { url: `http://127.0.0.1:${port}`, format: 'table', interval: '1' },
          {
            isTTY: true,
            write: () => {},
            signal: new AbortController().signal,
            now: () => new Date(),
            sleep: async () => {},
          },
        ),
        { name: 'CliError', status: 403, message: /cyborg:telemetry:get/ },
      )
    } finally {
      refusing.close()
    }
    assert.ok(shown[0]!.startsWith(`${CLEAR_SCREEN}cyborg top: `))
    assert.match(shown[0]!, /\(retrying every 1 s\)\n$/)
  })
})
