/**
 * `cyborg api` with `[api] api_workers = 2` (issue 28) over PostgreSQL and RabbitMQ, beside a
 * `cyborg conductor`: both workers answer on the one port (the pid of each answer read from the
 * worker's debug log line, matched by the request id), /metrics on that port is the sum of both,
 * kill -9 of a worker gets it replaced while the other keeps answering, and SIGTERM drains: a
 * write in flight (held by a stopped conductor) is answered, then every process exits 0.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'node:http'
import { testDialects, type TestDatabase } from '../support/db.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'

const [dialects, broker] = await Promise.all([testDialects(), testBroker()])
const postgres = dialects.find((d) => d.name === 'postgres')
const skip = postgres?.skip ?? broker.skip

const title =
  'cyborg api with api_workers = 2: both answer, a killed one is replaced, SIGTERM drains'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 150_000 }, () => {
    let db: TestDatabase
    let vhost: TestVhost
    let env: Record<string, string>
    let conductor: RunningService
    let api: RunningService
    const started: RunningService[] = []

    /** GET on a connection of its own (so that the primary hands each to the next worker). */
    const get = (path: string) =>
      new Promise<{ status: number; requestId: string; body: string }>((resolve, reject) => {
        const req = request(`${api.url}${path}`, { agent: false }, (res) => {
          let body = ''
          res.on('data', (d: Buffer) => (body += d.toString()))
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              requestId: String(res.headers['x-openstack-request-id']),
              body,
            }),
          )
        })
        req.on('error', reject)
        req.end()
      })
    /** The pid whose log line reports the request `requestId`. */
    const pidOf = async (requestId: string): Promise<number> => {
      for (let i = 0; i < 100; i++) {
        const line = api
          .output()
          .split('\n')
          .find((l) => l.includes(`"request_id":"${requestId}"`) && l.includes('"msg":"request"'))
        if (line) return (JSON.parse(line) as { pid: number }).pid
        await sleep(50)
      }
      throw new Error(`no log line for request ${requestId}`)
    }
    /** `n` profile lists on fresh connections, each answered 200; the pids that answered. */
    const probe = async (n: number): Promise<number[]> => {
      const pids: number[] = []
      for (let i = 0; i < n; i++) {
        const res = await get('/v2/device_profiles')
        assert.equal(res.status, 200, res.body)
        pids.push(await pidOf(res.requestId))
      }
      return pids
    }
    const workerPids = () =>
      readFileSync(`/proc/${api.child.pid}/task/${api.child.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number)

    before(async () => {
      ;[db, vhost] = await Promise.all([postgres!.create(), broker.createVhost()])
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '20',
        CYBORG_LOG_LEVEL: 'info',
      }
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      conductor = await startService({
        command: ['conductor'],
        env,
        ready: printed(/"msg":"cyborg conductor is ready"/),
      })
      started.push(conductor)
      api = await startService({
        command: ['api'],
        env: { ...env, CYBORG_API__API_WORKERS: '2', CYBORG_LOG_LEVEL: 'debug' },
        ready: printed(/cyborg api is ready at \S+: 2 workers/),
        timeoutMs: 60_000,
      })
      started.push(api)
    })

    after(async () => {
      for (const service of started)
        if (service.child.exitCode === null) service.child.kill('SIGKILL')
      await Promise.all(started.map((s) => s.stop().catch(() => null)))
      await vhost?.drop()
      await db?.close()
    })

    void it('both workers answer on the one port; /metrics there counts the requests of both', async () => {
      const workers = workerPids()
      assert.equal(workers.length, 2, api.output())
      const pids = await probe(8)
      assert.deepEqual(new Set(pids), new Set(workers), `answered by ${pids.join(', ')}`)
      const text = (await get('/metrics')).body
      const served = [
        ...text.matchAll(
          /^cyborg_http_requests_total\{[^}]*route="\/v2\/device_profiles"[^}]*status="200"[^}]*\} (\d+)$/gm,
        ),
      ].reduce((sum, m) => sum + Number(m[1]), 0)
      assert.equal(served, 8, text)
    })

    void it('kill -9 of a worker: the other answers, and a new worker takes its place', async () => {
      const [victim, survivor] = workerPids() as [number, number]
      process.kill(victim, 'SIGKILL')
      await waitFor(() => !workerPids().includes(victim), 'the killed worker is reaped')
      assert.deepEqual(new Set(await probe(6)), new Set([survivor]))
      await waitFor(() => workerPids().length === 2, 'a replacement is forked')
      const replacement = workerPids().find((p) => p !== survivor)!
      await waitFor(
        () => api.output().includes(`"worker_pid":${replacement},"msg":"API worker ready"`),
        'the replacement is ready',
      )
      assert.match(api.output(), new RegExp(`API worker ${victim} died \\(signal SIGKILL\\)`))
      assert.deepEqual(new Set(await probe(8)), new Set([survivor, replacement]))
    })

    void it('a worker that cannot start again is retried a bounded number of times, then the api exits 1 saying why', async () => {
      const file = join(api.stateDir, 'cyborg.conf')
      writeFileSync(file, '[api]\napi_workers = 2\n')
      const doomed = await startService({
        command: ['--config-file', file, 'api'],
        env,
        ready: printed(/cyborg api is ready at \S+: 2 workers/),
        timeoutMs: 60_000,
      })
      started.push(doomed)
      const exited = new Promise<number | null>((resolve) => doomed.child.once('exit', resolve))
      writeFileSync(file, '[api]\napi_workers = 2\nmax_arqs_per_request = none\n') // a bad edit, then a crash
      const [victim] = readFileSync(
        `/proc/${doomed.child.pid}/task/${doomed.child.pid}/children`,
        'utf8',
      )
        .trim()
        .split(/\s+/)
      process.kill(Number(victim), 'SIGKILL')
      assert.equal(await exited, 1, doomed.output())
      const out = doomed.output()
      assert.equal(
        out.match(/\[api\] max_arqs_per_request = "none": expected an integer >= 1/g)?.length,
        4,
        out,
      )
      assert.match(
        out,
        /cyborg api: an API worker exited within 10 s of its start 5 times in a row \(the last: exit code 1\); giving up/,
      )
      assert.match(out, /starting another in 4000 ms/)
    })

    void it('SIGTERM drains: a write in flight is answered, then the api exits 0', async () => {
      process.kill(conductor.child.pid!, 'SIGSTOP') // the write waits for its RPC reply
      const name = 'dp-in-flight'
      const write = fetch(`${api.url}/v2/device_profiles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ name, groups: [{ 'resources:FPGA': '1' }] }]),
      })
      await sleep(500)
      const exited = new Promise<number | null>((resolve) => api.child.once('exit', resolve))
      api.child.kill('SIGTERM')
      await sleep(1000)
      assert.equal(api.child.exitCode, null, 'the api waits for the request in flight')
      process.kill(conductor.child.pid!, 'SIGCONT')
      const res = await write
      assert.equal(res.status, 201, await res.text())
      assert.equal(await exited, 0, api.output())
      assert.match(api.output(), /"signal":"SIGTERM","msg":"shutting down"/)
      assert.equal(await conductor.stop(), 0, conductor.output())
    })
  })

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return
    await sleep(100)
  }
  throw new Error(`timed out waiting until ${what}`)
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
