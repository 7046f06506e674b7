/**
 * Clean before reuse across a crash (issue 18, docs/cleaning.md): `cyborg api`, `cyborg conductor`
 * and `cyborg agent` (fake driver, its clean slowed to CLEAN_DELAY_MS with `update-driver`) as
 * separate processes over RabbitMQ and PostgreSQL, with `[conductor] clean_retry_interval` = 1 s.
 * PostgreSQL only: the paths under test are the processes and the bus, not the SQL dialects.
 *
 * - kill -9 of the agent mid-clean: the unit stays `cleaning` (in use, not offered, counted as
 *   `cleaning` by GET /v2/capacity, skipped by a bind) for longer than the retry interval while
 *   the sweep keeps asking; the agent restarted on its state dir cleans it, and it is offered again
 *   with one `clean` custody record for the interval.
 * - kill -9 of the conductor mid-clean: a new conductor's sweep asks again; the unit is back in
 *   service once the agent has answered it, with one `clean` record for the interval.
 *
 * Both watch the release fence: the unit is polled every ~100 ms from the unbind on, and in every
 * sample it is either still cleaning (in use, no clean record of the interval) or settled (back in
 * service and the record written, in one snapshot).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects, type TestDatabase } from '../support/db.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'
import { eventually } from '../support/host-inventory.js'
import { assertFence, sleep, watchUnit } from '../support/clean-fence.js'

const postgres = (await testDialects()).find((d) => d.name === 'postgres')
const broker = await testBroker()
const skip = postgres?.skip ?? broker.skip

/** `[conductor] clean_retry_interval`, seconds (its minimum). */
const RETRY_S = 1
/** How long the fake driver's clean takes. */
const CLEAN_DELAY_MS = 3000
const MICROVERSION = { 'OpenStack-API-Version': 'accelerator 2.6' }

const title =
  'clean before reuse across kill -9 of the agent and of the conductor (PostgreSQL, RabbitMQ)'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 90_000 }, () => {
    const host = `ck-${randomBytes(4).toString('hex')}`
    let db: TestDatabase
    let vhost: TestVhost
    let env: Record<string, string>
    /** The agent's and the conductor's state dirs, kept across their restarts. */
    let agentState: string
    let conductorState: string
    let api: RunningService
    let agent: RunningService
    let conductor: RunningService
    const started: RunningService[] = []
    /** Outputs of agents that were killed, for the "unit cleaned" count. */
    const agentOutputs: (() => string)[] = []

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
      if (command === 'agent') agentOutputs.push(() => service.output())
      return service
    }
    const kill9 = async (s: RunningService) => {
      const gone = new Promise((r) => s.child.once('exit', r))
      s.child.kill('SIGKILL')
      await gone
    }
    const json = async <T>(res: Promise<Response>, status?: number): Promise<T> => {
      const r = await res
      const text = await r.text()
      if (status === undefined) assert.ok(r.ok, `${r.status} ${text}`)
      else assert.equal(r.status, status, text)
      return (text === '' ? undefined : JSON.parse(text)) as T
    }
    const send = (method: string, p: string, body?: unknown) =>
      fetch(`${api.url}${p}`, {
        method,
        headers: { 'content-type': 'application/json', ...MICROVERSION },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })

    const capacity = async () => {
      const { capacity: rows } = await json<{
        capacity: { total: number; used: number; cleaning: number; free: number }[]
      }>(send('GET', `/v2/capacity?hostname=${host}`))
      assert.equal(rows.length, 1)
      return rows[0]!
    }
    const createArq = async () =>
      (
        await json<{ arqs: { uuid: string }[] }>(
          send('POST', '/v2/accelerator_requests', { device_profile_name: `fpga-${host}` }),
        )
      ).arqs[0]!.uuid
    /** A standalone bind (hostname and instance, no provider): 202 once Bound or BindFailed. */
    const bind = async (arq: string) => {
      await json(
        send('PATCH', '/v2/accelerator_requests', {
          [arq]: [
            { path: '/hostname', op: 'add', value: host },
            { path: '/instance_uuid', op: 'add', value: randomUUID() },
          ],
        }),
        202,
      )
      const row = await db.db
        .selectFrom('accelerator_requests')
        .select(['state', 'attach_handle_id'])
        .where('uuid', '=', arq)
        .executeTakeFirstOrThrow()
      assert.equal(row.state, 'Bound')
      assert.notEqual(row.attach_handle_id, null)
      return row.attach_handle_id!
    }
    const unbind = (arq: string) =>
      json(
        send('PATCH', '/v2/accelerator_requests', {
          [arq]: ['/hostname', '/device_rp_uuid', '/instance_uuid'].map((p) => ({
            path: p,
            op: 'remove',
          })),
        }),
        202,
      )
    const handleRow = (id: number) =>
      db.db
        .selectFrom('attach_handles')
        .select(['uuid', 'in_use', 'clean_state', 'clean_attempt_at', 'clean_allocation_uuid'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    const cleanRecords = (allocation: string) =>
      db.db
        .selectFrom('custody_records')
        .selectAll()
        .where('kind', '=', 'clean')
        .where('allocation_uuid', '=', allocation)
        .execute()
    /**
     * The interval's one clean record, ok, written at least a clean's duration after the release:
     * the clean whose answer settled it started after the release (a clean begun earlier, e.g. for
     * a stale ask, would not have cleaned what the tenant left).
     */
    const oneCleanRecord = async (allocation: string) => {
      const records = await cleanRecords(allocation)
      assert.equal(records.length, 1, 'one clean record for the interval: a settle is conditional')
      const [record] = records
      assert.equal(record!.clean_result, 'ok')
      assert.equal(record!.clean_method, 'fake')
      assert.match(record!.clean_evidence_sha256 ?? '', /^[0-9a-f]{64}$/)
      const took = Date.parse(record!.cleaned_at!) - Date.parse(record!.released_at!)
      assert.ok(took >= CLEAN_DELAY_MS, `settled ${took} ms after the release`)
      return record!
    }
    /** "unit cleaned" log lines of every agent process so far: cleans the agents finished. */
    const cleansDone = () =>
      agentOutputs.reduce((n, out) => n + (out().split('"msg":"unit cleaned"').length - 1), 0)
    /** Released, not yet asked: its interval's record uuid. */
    const releasedUnit = async (id: number) => {
      const row = await handleRow(id)
      assert.equal(row.clean_state, 'pending')
      assert.equal(Number(row.in_use), 1)
      assert.ok(row.clean_allocation_uuid, 'the release names its interval')
      return row.clean_allocation_uuid
    }
    const asked = (id: number) =>
      eventually(
        async () => {
          const row = await handleRow(id)
          assert.ok(row.clean_attempt_at, 'the conductor asked the agent')
          return row.clean_attempt_at
        },
        10_000,
        50,
      )
    const settled = (id: number, timeoutMs: number) =>
      eventually(
        async () => {
          const row = await handleRow(id)
          assert.equal(row.clean_state, null, 'cleaned')
          return row
        },
        timeoutMs,
        100,
      )

    before(async () => {
      ;[db, vhost, agentState, conductorState] = await Promise.all([
        postgres!.create(),
        broker.createVhost(),
        mkdtemp(path.join(tmpdir(), 'cyborg-ck-agent-')),
        mkdtemp(path.join(tmpdir(), 'cyborg-ck-conductor-')),
      ])
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__HOST: host,
        CYBORG_AGENT__ENABLED_DRIVERS: 'fake',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '10',
        CYBORG_CONDUCTOR__CLEAN_RETRY_INTERVAL: String(RETRY_S),
        CYBORG_LOG_LEVEL: 'info',
      }
    })

    after(async () => {
      for (const s of started) if (s.child.exitCode === null) s.child.kill('SIGKILL')
      await Promise.all(started.map((s) => s.stop().catch(() => null)))
      await vhost?.drop()
      await db?.close()
      await Promise.all(
        [agentState, conductorState].map((d) => d && rm(d, { recursive: true, force: true })),
      )
    })

    void it('starts; the fake device is offered; its clean takes CLEAN_DELAY_MS', async () => {
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      conductor = await start('conductor', conductorState)
      ;[agent, api] = await Promise.all([start('agent', agentState), start('api')])
      await eventually(async () => assert.equal((await capacity()).free, 16), 30_000, 200)
      await json(
        send('POST', '/v2/device_profiles', [
          { name: `fpga-${host}`, groups: [{ 'resources:FPGA': '1' }] },
        ]),
      )
      const updated = await json<{ hosts: { hostname: string; status: string }[] }>(
        send('PATCH', '/v1/drivers/fake', {
          hostname: host,
          options: { clean_delay_ms: String(CLEAN_DELAY_MS) },
        }),
      )
      assert.deepEqual(
        updated.hosts.map((h) => [h.hostname, h.status]),
        [[host, 'ok']],
      )
    })

    /** The unit the agent scenario releases, cleaned and bound again by its end. */
    let unit = 0
    let rebound = ''

    void it('kill -9 of the agent mid-clean: the unit stays cleaning until the restarted agent cleans it', async (t) => {
      const first = await createArq()
      unit = await bind(first)
      await unbind(first)
      const allocation = await releasedUnit(unit)
      const watcher = watchUnit(db.db, unit, allocation)
      try {
        const firstAsk = await asked(unit)
        // The ask is stamped before it is sent: give the agent time to take it, well within the clean.
        await sleep(700)
        assert.equal(cleansDone(), 0, 'the clean was still running at the kill')
        await kill9(agent)
        const killedAt = Date.now()

        // Agent down: the sweep asks again (the stamp moves on), and nothing frees the unit.
        const reasked = await eventually(
          async () => {
            const row = await handleRow(unit)
            assert.ok(row.clean_attempt_at && row.clean_attempt_at > firstAsk!, 'asked again')
            return row.clean_attempt_at
          },
          10_000,
          100,
        )
        t.diagnostic(`asked at ${firstAsk}, again at ${reasked} with the agent down`)
        const view = await capacity()
        assert.equal(view.cleaning, 1, JSON.stringify(view))
        assert.equal(view.free, 15, JSON.stringify(view))
        // A bind meanwhile takes another unit (the lowest free id), never the cleaning one.
        const other = await createArq()
        assert.notEqual(await bind(other), unit, 'a bind never takes a cleaning unit')
        const wait = 2.5 * RETRY_S * 1000 - (Date.now() - killedAt)
        if (wait > 0) await sleep(wait)
        const still = await handleRow(unit)
        assert.deepEqual([Number(still.in_use), still.clean_state], [1, 'pending'])

        // The agent comes back on its state dir (its driver options, clean_delay_ms, survive).
        const restartedAt = Date.now()
        agent = await start('agent', agentState)
        await settled(unit, 20_000)
        t.diagnostic(
          `down ${restartedAt - killedAt} ms; settled ${Date.now() - restartedAt} ms after the restart began`,
        )
      } finally {
        assertFence(await watcher.stop(), t)
      }
      const record = await oneCleanRecord(allocation)
      assert.equal(record.handle_uuid, (await handleRow(unit)).uuid)
      const durations = [...agent.output().matchAll(/"ms":(\d+)[^\n]*"msg":"unit cleaned"/g)].map(
        (m) => Number(m[1]),
      )
      assert.ok(durations.length >= 1, agent.output())
      assert.ok(
        durations.every((ms) => ms >= CLEAN_DELAY_MS),
        `the restarted agent kept clean_delay_ms: ${durations.join(', ')} ms`,
      )
      // Back in service: the next bind takes it (the lowest free id) again.
      rebound = await createArq()
      assert.equal(await bind(rebound), unit)
    })

    void it('kill -9 of the conductor mid-clean: a new conductor asks again; back in service once cleaned', async (t) => {
      assert.ok(rebound, 'the agent scenario bound the unit again')
      const before = cleansDone()
      await unbind(rebound)
      const allocation = await releasedUnit(unit)
      const watcher = watchUnit(db.db, unit, allocation)
      try {
        await asked(unit)
        await sleep(500)
        await kill9(conductor)
        const killedAt = Date.now()
        // No conductor for longer than the retry interval: nothing settles the unit meanwhile.
        await sleep(1.5 * RETRY_S * 1000)
        const still = await handleRow(unit)
        assert.deepEqual([Number(still.in_use), still.clean_state], [1, 'pending'])

        conductor = await start('conductor', conductorState)
        const back = Date.now()
        await settled(unit, 20_000)
        t.diagnostic(
          `conductor down ${back - killedAt} ms; settled ${Date.now() - back} ms after the new one was ready`,
        )
      } finally {
        assertFence(await watcher.stop(), t)
      }
      await oneCleanRecord(allocation)
      // The first clean's answer went to the dead conductor; the new ask joined it or ran again.
      const ran = await eventually(async () => {
        const n = cleansDone() - before
        assert.ok(n >= 1)
        return n
      })
      t.diagnostic(`the agent finished ${ran} clean(s) of the unit for this release`)
      // Back in service through the new conductor.
      assert.equal(await bind(await createArq()), unit)
    })

    void it('SIGTERM stops every process with exit code 0', async () => {
      for (const s of [api, agent, conductor]) assert.equal(await s.stop(), 0, s.output())
    })
  })
