/**
 * Programming across a crash (issue 19, docs/fpga.md): `cyborg api`, `cyborg conductor` and
 * `cyborg agent` (fake driver, its flash slowed to PROGRAM_DELAY_MS with `update-driver`, images
 * from a real Glance) as separate processes over RabbitMQ and PostgreSQL, with
 * `[conductor] reconfigure_timeout` = 4 s. kill -9 of the agent mid-flash:
 *
 * - the program call fails (503) and the deployable's units stay out of service while the agent
 *   is down, through several sweeps: nothing is offered on a guess;
 * - the restarted agent reports the card without the function it was given before (the flash was
 *   cut: it holds none), the sweep lifts the fence once the agent has answered, and the deployable
 *   forgets its image: it is not left claiming a function it does not have.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects, type TestDatabase } from '../support/db.js'
import { glanceSkip, startGlance, type RunningGlance } from '../support/peers/glance.js'
import { eventually } from '../support/host-inventory.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'

const postgres = (await testDialects()).find((d) => d.name === 'postgres')
const broker = await testBroker()
const skip = postgres?.skip ?? broker.skip ?? (await glanceSkip())

const TIMEOUT_S = 4
const PROGRAM_DELAY_MS = 3000

const title = 'programming across kill -9 of the agent (PostgreSQL, RabbitMQ, Glance)'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 120_000 }, () => {
    const host = `pk-${randomBytes(4).toString('hex')}`
    let db: TestDatabase
    let vhost: TestVhost
    let glance: RunningGlance
    let env: Record<string, string>
    let agentState: string
    let api: RunningService
    let agent: RunningService
    let conductor: RunningService
    const started: RunningService[] = []
    let deployable: { id: number; uuid: string }

    const start = async (command: 'api' | 'agent' | 'conductor', stateDir?: string) => {
      const service = await startService({
        command: [command],
        env,
        stateDir,
        ready:
          command === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${command} is ready"`)),
        timeoutMs: 60_000,
      })
      started.push(service)
      return service
    }
    const send = (method: string, p: string, body?: unknown) =>
      fetch(`${api.url}${p}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const program = (image: string) =>
      send('PATCH', `/v2/deployables/${deployable.uuid}/program`, [
        { path: '/program', op: 'replace', value: [{ image_uuid: image }] },
      ])
    const fenced = async () =>
      Number(
        (
          await db.db
            .selectFrom('attach_handles')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('reconfig_uuid', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      )
    const functionTraits = async () =>
      (
        await db.db
          .selectFrom('attributes')
          .select('value')
          .where('deployable_id', '=', deployable.id)
          .execute()
      )
        .map((a) => a.value)
        .filter((v) => v.startsWith('CUSTOM_FPGA_FUNCTION_ID_'))
    const bitstream = async () =>
      (
        await db.db
          .selectFrom('deployables')
          .select('bitstream_id')
          .where('id', '=', deployable.id)
          .executeTakeFirstOrThrow()
      ).bitstream_id

    before(async () => {
      ;[db, vhost, glance, agentState] = await Promise.all([
        postgres!.create(),
        broker.createVhost(),
        startGlance(),
        mkdtemp(path.join(tmpdir(), 'cyborg-pk-agent-')),
      ])
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__HOST: host,
        CYBORG_AGENT__ENABLED_DRIVERS: 'fake',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '10',
        CYBORG_CONDUCTOR__RECONFIGURE_TIMEOUT: String(TIMEOUT_S),
        CYBORG_GLANCE__ENDPOINT_OVERRIDE: glance.url,
        CYBORG_LOG_LEVEL: 'info',
      }
    })
    after(async () => {
      for (const s of started) if (s.child.exitCode === null) s.child.kill('SIGKILL')
      await Promise.all(started.map((s) => s.stop().catch(() => null)))
      await vhost?.drop()
      await db?.close()
      await glance?.stop()
      if (agentState) await rm(agentState, { recursive: true, force: true })
    })

    void it('starts, and programs the card once (the function shows)', async () => {
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      conductor = await start('conductor')
      ;[agent, api] = await Promise.all([start('agent', agentState), start('api')])
      deployable = await eventually(
        () => db.db.selectFrom('deployables').select(['id', 'uuid']).executeTakeFirstOrThrow(),
        30_000,
        200,
      )
      const updated = await send('PATCH', '/v1/drivers/fake', {
        hostname: host,
        options: { program_delay_ms: String(PROGRAM_DELAY_MS) },
      })
      assert.ok(updated.ok, await updated.text())
      const gzip = await glance.upload(Buffer.from('function_id=gzip\n'))
      const r = await program(gzip)
      assert.equal(r.status, 200, await r.text())
      assert.deepEqual(await functionTraits(), ['CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP'])
      assert.equal(await bitstream(), gzip)
    })

    void it('kill -9 of the agent mid-flash: the units stay out until the restarted agent has rediscovered the card', async (t) => {
      const crc = await glance.upload(Buffer.from('function_id=crc32\n'))
      const answer = program(crc)
      await eventually(async () => assert.equal(await fenced(), 16), 10_000, 50)
      await new Promise((r) => setTimeout(r, 700))
      const gone = new Promise((r) => agent.child.once('exit', r))
      agent.child.kill('SIGKILL')
      await gone
      const killedAt = Date.now()
      const res = await answer
      assert.equal(res.status, 503, await res.text())
      // Down for several sweeps (every TIMEOUT_S / 2): the units stay fenced.
      const wait = 3 * TIMEOUT_S * 1000 - (Date.now() - killedAt)
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      assert.equal(await fenced(), 16, 'still out of service with the agent down')

      agent = await start('agent', agentState)
      const back = Date.now()
      await eventually(async () => assert.equal(await fenced(), 0), 30_000, 200)
      t.diagnostic(`down ${back - killedAt} ms; lifted ${Date.now() - back} ms after the restart`)
      assert.deepEqual(await functionTraits(), [], 'no function it does not have')
      assert.equal(await bitstream(), null, 'the image is forgotten')
      const free = await db.db
        .selectFrom('attach_handles')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('in_use', '=', 0)
        .executeTakeFirstOrThrow()
      assert.equal(Number(free.n), 16, 'back in service')
    })

    void it('SIGTERM stops every process with exit code 0', async () => {
      for (const s of [api, agent, conductor]) assert.equal(await s.stop(), 0, s.output())
    })
  })
