/**
 * The production shape, as the README's "Running the services separately" describes it:
 * `cyborg db sync`, then `cyborg conductor`, `cyborg agent` and `cyborg api` as separate processes
 * over PostgreSQL and RabbitMQ, each run on a fresh database and a fresh vhost.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { testDialects, type TestDatabase } from '../support/db.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'

const [dialects, broker] = await Promise.all([testDialects(), testBroker()])
const postgres = dialects.find((d) => d.name === 'postgres')
const skip = postgres?.skip ?? broker.skip

/** What the API answers to a device profile creation. */
interface Created {
  status: number
  body: string
}

const title = 'api, conductor and agent as separate processes over PostgreSQL and RabbitMQ'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 90_000 }, () => {
    const host = `mp-${randomBytes(4).toString('hex')}`
    let db: TestDatabase
    let vhost: TestVhost
    let env: Record<string, string>
    let api: RunningService
    let agent: RunningService
    let conductor: RunningService
    const started: RunningService[] = []

    const start = async (command: string, extra: Record<string, string> = {}) => {
      const service = await startService({
        command: [command],
        env: { ...env, ...extra },
        ready:
          command === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${command} is ready"`)),
      })
      started.push(service)
      return service
    }

    const groups = (name: string) => [
      {
        'resources:FPGA': '1',
        [`trait:CUSTOM_${name.toUpperCase().replace(/-/g, '_')}`]: 'required',
      },
    ]
    const create = async (name: string): Promise<Created> => {
      const res = await fetch(`${api.url}/v2/device_profiles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ name, description: null, groups: groups(name) }]),
      })
      return { status: res.status, body: await res.text() }
    }
    const profiles = async () => {
      const res = await fetch(`${api.url}/v2/device_profiles`)
      assert.equal(res.status, 200)
      return ((await res.json()) as { device_profiles: { name: string; groups: unknown }[] })
        .device_profiles
    }

    before(async () => {
      ;[db, vhost] = await Promise.all([postgres!.create(), broker.createVhost()])
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__HOST: host,
        CYBORG_AGENT__ENABLED_DRIVERS: 'fake',
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '10',
        CYBORG_LOG_LEVEL: 'info',
      }
    })

    after(async () => {
      for (const service of started)
        if (service.child.exitCode === null) service.child.kill('SIGKILL')
      await Promise.all(started.map((s) => s.stop().catch(() => null)))
      await vhost?.drop()
      await db?.close()
    })

    void it('db sync brings the schema up to date', async () => {
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      assert.match(sync.output, /the schema is current/)
    })

    void it('conductor, then agent and api start; the API lists the agent’s fake device', async () => {
      conductor = await start('conductor')
      // The API gives up on the conductor after 3 s (503), so the outage below stays short.
      ;[agent, api] = await Promise.all([
        start('agent'),
        start('api', { CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '3' }),
      ])
      let devices: { hostname: string; vendor: string }[] = []
      for (let i = 0; i < 100 && devices.length === 0; i++) {
        const res = await fetch(`${api.url}/v2/devices?hostname=${host}`)
        devices = ((await res.json()) as { devices: typeof devices }).devices
        if (devices.length === 0) await sleep(100)
      }
      assert.equal(devices.length, 1, agent.output())
      assert.equal(devices[0]!.hostname, host)
    })

    void it('a device profile created through the API is readable', async () => {
      const created = await create('dp-first')
      assert.equal(created.status, 201, created.body)
      const { uuid } = JSON.parse(created.body) as { uuid: string }
      const shown = await fetch(`${api.url}/v2/device_profiles/${uuid}`)
      assert.equal(shown.status, 200)
      const { device_profile: profile } = (await shown.json()) as {
        device_profile: { name: string; groups: unknown }
      }
      assert.equal(profile.name, 'dp-first')
      assert.deepEqual(profile.groups, groups('dp-first'))
    })

    void it('kill -9 the conductor: writes fail as 503, never 500; a new conductor serves again; nothing half-written', async () => {
      const burstNames = Array.from({ length: 8 }, (_, i) => `dp-burst-${i}`)
      const burst = Promise.all(burstNames.map((name) => create(name)))
      await sleep(15)
      const killed = new Promise((resolve) => conductor.child.once('exit', resolve))
      conductor.child.kill('SIGKILL')
      await killed

      // Nobody serves the conductor topic: the call waits in the queue, times out, and is dropped there.
      const outage = await create('dp-outage')
      assert.equal(outage.status, 503, outage.body)

      conductor = await start('conductor')
      const again = await create('dp-after')
      assert.equal(again.status, 201, again.body)

      const results = await burst
      const listed = await profiles()
      const byName = new Map(listed.map((p) => [p.name, p]))
      assert.equal(byName.size, listed.length, 'no name twice')
      for (const [i, result] of results.entries()) {
        const name = burstNames[i]!
        // 201: written; 503: in flight when the conductor died, written or not (the caller may retry);
        // 409: a request redelivered after the conductor committed it but died before replying.
        assert.ok(
          [201, 409, 503].includes(result.status),
          `${name}: ${result.status} ${result.body}`,
        )
        if (result.status !== 503)
          assert.ok(byName.has(name), `${name} answered ${result.status} but is missing`)
      }
      for (const p of listed) assert.deepEqual(p.groups, groups(p.name), `${p.name} is complete`)
      assert.ok(!byName.has('dp-outage'), 'an expired request is never served late')
      assert.ok(byName.has('dp-first') && byName.has('dp-after'))
    })

    void it('SIGTERM stops every process with exit code 0', async () => {
      assert.equal(await api.stop(), 0, api.output())
      assert.equal(await agent.stop(), 0, agent.output())
      assert.equal(await conductor.stop(), 0, conductor.output())
    })
  })

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
