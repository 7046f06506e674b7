/**
 * Fleet health across processes (issue 15): `cyborg api`, a `cyborg conductor` and two `cyborg
 * agent`s on fixture hosts (two A100s each, nvidia-gpu/ecc, with a stand-in `nvidia-smi` that
 * prints the host's recorded XML), over RabbitMQ, PostgreSQL and a real Placement.
 *
 * - An uncorrectable ECC count on one GPU fences that GPU alone (Placement reserved = total), and
 *   the ARQ bound to it stays Bound; once the count is gone, damping offers it again after two
 *   healthy reports.
 * - kill -STOP of an agent (silent, not dead): within service_down_time plus a sweep its
 *   providers are reserved in Placement and a standalone bind on its host fails naming the silent
 *   agent; kill -CONT: its next report offers the devices again.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { testDialects, type TestDatabase } from '../support/db.js'
import { printed, runCommand, startService, type RunningService } from '../support/service.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'
import { testBroker, type TestVhost } from '../support/peers/rabbitmq.js'
import { eventually } from '../support/host-inventory.js'
import { gpuHost, setEccErrors, type GpuHost } from '../support/gpu-host.js'
import {
  osloListenerSkip,
  startOsloListener,
  type RunningListener,
} from '../support/peers/oslo-listener.js'

const postgres = (await testDialects()).find((d) => d.name === 'postgres')
const skip =
  postgres?.skip ??
  (await placementSkip()) ??
  (await testBroker()).skip ??
  (await osloListenerSkip())
const DOWN_S = 3

interface DeviceView {
  uuid: string
  hostname: string
  health: string
  health_reason: string | null
}

const title =
  'fleet health: an ECC error fences one GPU, kill -STOP fences a silent agent’s host, and both come back'
if (skip !== undefined) void it(title, { skip }, () => {})
else
  void describe(title, { timeout: 180_000 }, () => {
    const id = randomBytes(3).toString('hex')
    let db: TestDatabase
    let placement: RunningPlacement
    /** A fresh vhost on the machine's broker (nothing here restarts RabbitMQ). */
    let rabbit: TestVhost
    let hostA: GpuHost
    let hostB: GpuHost
    let env: Record<string, string>
    /** A real oslo.messaging notification listener, as Ceilometer runs one. */
    let listener: RunningListener
    const services = new Map<string, RunningService>()
    let boundArq = ''

    const start = async (name: string, command: string, extra: Record<string, string> = {}) => {
      const service = await startService({
        command: [command],
        env: { ...env, ...extra },
        ready:
          command === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${command} is ready"`)),
        timeoutMs: 60_000,
      })
      services.set(name, service)
      return service
    }
    const agentEnv = (host: GpuHost) => ({
      CYBORG_DEFAULT__HOST: host.host,
      CYBORG_AGENT__HOST_ROOT: host.root,
      CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu',
      CYBORG_AGENT__AUTO_ACTIVATE: 'true',
      PATH: `${host.bin}:${process.env.PATH ?? ''}`,
    })
    const api = () => services.get('api')!.url
    const json = async <T>(res: Promise<Response>): Promise<T> => {
      const r = await res
      const text = await r.text()
      assert.ok(r.ok, `${r.status} ${text}`)
      return (text === '' ? undefined : JSON.parse(text)) as T
    }
    const get = <T>(p: string) =>
      json<T>(fetch(`${api()}${p}`, { headers: { 'OpenStack-API-Version': 'accelerator 2.5' } }))
    const devicesOf = async (host: GpuHost) =>
      (await get<{ devices: DeviceView[] }>(`/v2/devices?hostname=${host.host}`)).devices
    /** Deployable name → whether Placement holds its whole inventory reserved. */
    const reserved = async (host: GpuHost): Promise<Map<string, boolean>> => {
      const { deployables } = await get<{ deployables: { name: string; rp_uuid: string }[] }>(
        '/v2/deployables',
      )
      const out = new Map<string, boolean>()
      for (const d of deployables.filter((x) => x.name.startsWith(`${host.host}_`))) {
        const inv = Object.values(await placement.client.getInventories(d.rp_uuid))[0]!
        out.set(d.name.slice(host.host.length + 1), inv.reserved === inv.total)
      }
      return out
    }
    const createArq = async () =>
      (
        await json<{ arqs: { uuid: string }[] }>(
          fetch(`${api()}/v2/accelerator_requests`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ device_profile_name: `gpu-${id}` }),
          }),
        )
      ).arqs[0]!.uuid
    /** A standalone bind (hostname and instance, no provider); resolves with the ARQ's end state. */
    const bind = async (arq: string, host: GpuHost) => {
      const patch = [
        { path: '/hostname', op: 'add', value: host.host },
        { path: '/instance_uuid', op: 'add', value: randomUUID() },
      ]
      const res = await fetch(`${api()}/v2/accelerator_requests`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ [arq]: patch }),
      })
      assert.ok(res.status < 300, `${res.status} ${await res.text()}`)
      return eventually(async () => {
        const view = await get<{ state: string; attach_handle_info: unknown }>(
          `/v2/accelerator_requests/${arq}`,
        )
        assert.ok(view.state === 'Bound' || view.state === 'BindFailed', view.state)
        return view
      })
    }

    before(async () => {
      await Promise.all([
        postgres!.create().then((x) => (db = x)),
        startPlacement().then((x) => (placement = x)),
        testBroker()
          .then((b) => b.createVhost())
          .then((x) => (rabbit = x)),
        gpuHost(`fh-a-${id}`).then((x) => (hostA = x)),
        gpuHost(`fh-b-${id}`).then((x) => (hostB = x)),
      ])
      env = {
        CYBORG_DATABASE__CONNECTION: db.url,
        CYBORG_DEFAULT__TRANSPORT_URL: rabbit.url,
        CYBORG_DEFAULT__PERIODIC_INTERVAL: '1',
        CYBORG_AGENT__REPORT_INTERVAL: '1',
        CYBORG_DEFAULT__SERVICE_DOWN_TIME: String(DOWN_S),
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '10',
        CYBORG_CONDUCTOR__HEALTH_RECOVERY_REPORTS: '2',
        CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: placement.url,
        CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
        CYBORG_PLACEMENT__TOKEN: 'admin',
        CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
        CYBORG_OSLO_MESSAGING_NOTIFICATIONS__DRIVER: 'messagingv2',
        CYBORG_LOG_LEVEL: 'info',
      }
      listener = await startOsloListener({
        url: rabbit.url,
        count: 100_000,
        timeoutSeconds: 170,
      })
    })

    after(async () => {
      listener?.stop()
      for (const s of services.values()) {
        if (s.child.exitCode === null) s.child.kill('SIGCONT')
        if (s.child.exitCode === null) s.child.kill('SIGKILL')
      }
      await Promise.all([...services.values()].map((s) => s.stop().catch(() => null)))
      await Promise.all([rabbit?.drop(), placement?.stop(), db?.close()])
      await Promise.all([hostA?.remove(), hostB?.remove()])
    })

    void it('starts: every GPU of both hosts is ok and offered in Placement', async () => {
      const sync = await runCommand(['db', 'sync'], env)
      assert.equal(sync.code, 0, sync.output)
      await Promise.all([
        start('conductor', 'conductor'),
        start('api', 'api'),
        start('agent-a', 'agent', agentEnv(hostA)),
        start('agent-b', 'agent', agentEnv(hostB)),
      ])
      for (const host of [hostA, hostB]) {
        await eventually(async () => {
          const devices = await devicesOf(host)
          assert.equal(devices.length, 2)
          assert.ok(devices.every((d) => d.health === 'ok'))
          assert.deepEqual([...(await reserved(host)).values()], [false, false])
        })
      }
      await json(
        fetch(`${api()}/v2/device_profiles`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([{ name: `gpu-${id}`, groups: [{ 'resources:PGPU': '1' }] }]),
        }),
      )
      boundArq = await createArq()
      assert.equal((await bind(boundArq, hostA)).state, 'Bound')
    })

    void it('uncorrectable ECC errors fence that GPU alone; its bound ARQ stays Bound', async () => {
      await setEccErrors(hostA, '0000:3b:00.0', 2)
      const gpuA = await eventually(async () => {
        const d = (await devicesOf(hostA)).find((x) => x.health !== 'ok')
        assert.ok(d, 'GPU A fenced')
        return d
      })
      assert.equal(gpuA.health, 'failed')
      assert.match(gpuA.health_reason ?? '', /2 uncorrectable ECC errors/)
      await eventually(async () =>
        assert.deepEqual(
          Object.fromEntries(await reserved(hostA)),
          { '0000:3b:00.0': true, '0000:d8:00.0': false },
          'the fenced GPU is reserved; the other stays offered',
        ),
      )
      const arq = await get<{ state: string; device_rp_uuid: string }>(
        `/v2/accelerator_requests/${boundArq}`,
      )
      assert.equal(arq.state, 'Bound', 'an existing allocation is never touched')
      // The conductor's log reaches this process through a pipe: wait for the line.
      const fences = () =>
        services.get('conductor')!.output().split('"msg":"device fenced (health failed)').length - 1
      await eventually(async () => assert.equal(fences(), 1))

      await setEccErrors(hostA, '0000:3b:00.0', 0)
      await eventually(async () =>
        assert.ok((await devicesOf(hostA)).every((d) => d.health === 'ok')),
      )
      await eventually(async () =>
        assert.match(
          services.get('conductor')!.output(),
          /"msg":"device offered again \(health ok\)"/,
        ),
      )
      assert.equal(fences(), 1, 'the fence was logged once')
    })

    void it('kill -STOP of agent B fences its host within the lease; kill -CONT brings it back', async (t) => {
      const agentB = services.get('agent-b')!
      const stoppedAt = Date.now()
      agentB.child.kill('SIGSTOP')
      try {
        const fencedAfter = await eventually(async () => {
          const devices = await devicesOf(hostB)
          assert.ok(devices.every((d) => d.health === 'unknown'))
          for (const d of devices)
            assert.match(
              d.health_reason ?? '',
              new RegExp(`^agent cyborg-agent@${hostB.host} silent since `),
            )
          assert.deepEqual([...(await reserved(hostB)).values()], [true, true])
          return Date.now() - stoppedAt
        }, 30_000)
        t.diagnostic(
          `host B fenced in Placement ${fencedAfter} ms after SIGSTOP (lease ${DOWN_S} s)`,
        )
        const failed = await bind(await createArq(), hostB)
        assert.equal(failed.state, 'BindFailed')
        await eventually(async () =>
          assert.match(
            services.get('conductor')!.output(),
            new RegExp(
              `"reason":"agent cyborg-agent@${hostB.host} silent since [^"]+","msg":"bind failed"`,
            ),
          ),
        )
        assert.ok(
          (await devicesOf(hostA)).every((d) => d.health === 'ok'),
          'host A is not touched',
        )
      } finally {
        agentB.child.kill('SIGCONT')
      }
      await eventually(async () => {
        assert.ok((await devicesOf(hostB)).every((d) => d.health === 'ok'))
        assert.deepEqual([...(await reserved(hostB)).values()], [false, false])
      }, 30_000)
      assert.equal((await bind(await createArq(), hostB)).state, 'Bound')
    })

    void it('an oslo.messaging listener decoded device.added, arq.bound and device.health_changed', async () => {
      const seen = await eventually(async () => {
        const got = listener.soFar()
        const of = (type: string) => got.filter((n) => n.event_type === type)
        assert.ok(of('accelerator.device.added').length >= 4, 'four GPUs added')
        assert.ok(of('accelerator.arq.bound').length >= 2, 'two ARQs bound')
        const fenced = of('accelerator.device.health_changed').filter((n) => n.priority === 'error')
        assert.ok(fenced.length >= 1, 'a fence is an ERROR notification')
        return { got, of }
      }, 30_000)
      const [bound] = seen.of('accelerator.arq.bound')
      assert.equal(bound!.publisher_id.startsWith('accelerator-conductor:'), true)
      const data = (bound!.payload['cyborg_object.data'] ?? {}) as Record<string, unknown>
      assert.equal(data.uuid, boundArq, 'the first bound ARQ is the one bound first')
      assert.equal(typeof bound!.metadata.message_id, 'string')
    })

    void it('SIGTERM stops every process with exit code 0', async () => {
      for (const [name, s] of services) assert.equal(await s.stop(), 0, `${name}:\n${s.output()}`)
    })
  })
