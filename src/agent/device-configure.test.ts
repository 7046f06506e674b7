import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAgent, type Agent } from './agent.js'
import { createFileAgentCache } from './local-cache.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import type { MessageBus } from '../bus/bus.js'
import { createFakeDriver, FAKE_CONTROL_PATH } from '../drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../drivers/index.js'
import { createIntelQatDriver } from '../drivers/intel-qat/intel-qat.js'
import { createNvidiaGpuDriver } from '../drivers/nvidia-gpu/nvidia-gpu.js'
import {
  createFixtureHostProbe,
  type FixtureHostProbe,
  type FixtureHostProbeOptions,
} from '../drivers/host-probe/fixture-host-probe.js'
import type { AcceleratorDriver, DriverDeps } from '../drivers/driver.js'
import { createAgentClient, type AgentRpc } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { DriverError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import {
  controlPathAddress,
  type DiscoveredDevice,
  type InventorySnapshot,
  type PciAddress,
} from '../domain/inventory/inventory.js'
import { noopLogger } from '../domain/logger.js'
import { systemClock } from '../domain/time.js'

const fixtures = path.join(import.meta.dirname, '..', 'drivers', '__fixtures__')
const QAT: PciAddress = { domain: '0000', bus: '3d', device: '00', function: '0' }
const GPU: PciAddress = { domain: '0000', bus: '3b', device: '00', function: '0' }

interface ConfigureRig {
  agent: Agent
  client: AgentRpc
  probe: FixtureHostProbe
  /** What the conductor received, in order. */
  reports: InventorySnapshot[]
}

/** An agent over one fixture host, its conductor a recorder answering each report's counts. */
async function startAgent(
  bus: MessageBus,
  fixture: string,
  drivers: (deps: DriverDeps) => AcceleratorDriver[],
  options: { probe?: FixtureHostProbeOptions; cacheDir?: string } = {},
): Promise<ConfigureRig> {
  const probe = createFixtureHostProbe(path.join(fixtures, fixture), options.probe)
  const reports: InventorySnapshot[] = []
  const conductor = {
    reportInventory: async (req: InventorySnapshot) => {
      reports.push(req)
      const added = req.devices.reduce((n, d) => n + d.deployables.length, 0)
      return { changed: true, added, updated: 0, removed: 0, pending: 0 }
    },
    heartbeat: async () => {},
  } as unknown as ConductorRpc
  const cache =
    options.cacheDir === undefined
      ? undefined
      : createFileAgentCache(options.cacheDir, { log: noopLogger })
  const agent = createAgent(
    {
      conductor,
      drivers: drivers({ host: probe, hostname: 'h1' }),
      driverRegistry: DRIVER_REGISTRY,
      log: noopLogger,
      clock: systemClock,
      bus,
      hostProbe: probe,
      cache,
    },
    { host: 'h1', periodicIntervalMs: 3_600_000 },
  )
  await agent.start()
  await agent.discoverNow()
  return { agent, client: createAgentClient(bus, 'h1', { timeoutMs: 5000 }), probe, reports }
}

/** The device at `address` in the conductor's last report. */
function lastReported(rig: ConfigureRig, address: PciAddress): DiscoveredDevice {
  const want = controlPathAddress({ type: 'PCI', info: address })
  const found = rig.reports.at(-1)!.devices.find((d) => controlPathAddress(d.controlPath) === want)
  assert.ok(found, `the last report has no device at ${want}`)
  return found
}

const names = (d: DiscoveredDevice) => d.deployables.map((x) => x.name)

void describe('agent RPC 1.6: configureDevice (SR-IOV)', () => {
  const bus = createInProcessBus()
  after(() => bus.close())
  const qatAgent = (probe?: FixtureHostProbeOptions) =>
    startAgent(
      bus,
      'intel-qat/sriov',
      (deps) => [createFakeDriver(deps), createIntelQatDriver(deps)],
      {
        ...(probe ? { probe } : {}),
      },
    )

  void it('changes the VF count and reports the new deployables before it answers', async () => {
    const rig = await qatAgent()
    try {
      assert.equal(names(lastReported(rig, QAT)).length, 4)
      const sent = rig.reports.length
      const answer = await rig.client.configureDevice({
        controlPath: QAT,
        change: { sriovNumvfs: 8 },
      })
      assert.deepEqual(answer, {
        driver: 'intel-qat',
        address: '0000:3d:00.0',
        changed: true,
        previous: { sriovNumvfs: 4 },
        applied: { sriovNumvfs: 8 },
        report: {
          ok: true,
          result: { changed: true, added: 10, updated: 0, removed: 0, pending: 0 },
        },
      })
      assert.equal(rig.reports.length, sent + 1)
      assert.deepEqual(
        names(lastReported(rig, QAT)),
        [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `h1_0000:3d:01.${i}`),
      )
      const two = await rig.client.configureDevice({ controlPath: QAT, change: { sriovNumvfs: 2 } })
      assert.deepEqual([two.previous, two.applied], [{ sriovNumvfs: 8 }, { sriovNumvfs: 2 }])
      assert.deepEqual(names(lastReported(rig, QAT)), ['h1_0000:3d:01.0', 'h1_0000:3d:01.1'])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('answers NotFound, CONFIGURE_UNSUPPORTED and field errors across the bus', async () => {
    const rig = await qatAgent()
    try {
      const ask = (req: unknown) => rig.client.configureDevice(req as never)
      await assert.rejects(
        ask({ controlPath: { ...QAT, bus: '3e' }, change: { sriovNumvfs: 2 } }),
        (err) => {
          assert.ok(err instanceof NotFoundError)
          assert.equal(err.code, 'DEVICE_NOT_ON_HOST')
          return true
        },
      )
      await assert.rejects(
        ask({ controlPath: FAKE_CONTROL_PATH, change: { sriovNumvfs: 2 } }),
        (err) => {
          assert.ok(err instanceof InvalidInputError)
          assert.equal(err.code, 'CONFIGURE_UNSUPPORTED')
          assert.equal(err.message, 'driver fake cannot configure devices')
          assert.equal(err.details?.driver, 'fake')
          return true
        },
      )
      await assert.rejects(ask({ controlPath: QAT, change: { sriovNumvfs: 17 } }), (err) => {
        assert.ok(err instanceof InvalidInputError)
        assert.equal(err.code, 'SRIOV_NUMVFS_OUT_OF_RANGE')
        assert.equal(err.details?.field, 'sriov_numvfs')
        assert.equal(err.details?.max, 16)
        return true
      })
      for (const [req, fieldName] of [
        [{ controlPath: QAT, change: {} }, 'change'],
        [{ controlPath: QAT, change: { sriovNumvfs: 2, vgpuType: 'nvidia-1' } }, 'change'],
        [{ controlPath: QAT, change: { sriovNumvfs: 2, numvfs: 2 } }, 'change'],
        [{ controlPath: QAT }, 'change'],
        [{ controlPath: QAT, change: { sriovNumvfs: 1.5 } }, 'sriov_numvfs'],
        [{ controlPath: QAT, change: { sriovNumvfs: '2' } }, 'sriov_numvfs'],
        [{ controlPath: QAT, change: { vgpuType: '../x' } }, 'vgpu_type'],
        [{ controlPath: { bus: '3d' }, change: { sriovNumvfs: 2 } }, 'controlPath'],
      ] as const) {
        await assert.rejects(ask(req), (err) => {
          assert.ok(err instanceof InvalidInputError, JSON.stringify(req))
          assert.equal(err.details?.field, fieldName, JSON.stringify(req))
          return true
        })
      }
      assert.deepEqual(rig.probe.writes, [])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('a failed change answers CONFIGURE_FAILED with restored, reporting first when not restored', async () => {
    const numvfs = '/sys/bus/pci/devices/0000:3d:00.0/sriov_numvfs'
    const refused = new Set(['8'])
    const rig = await qatAgent({ failWrite: (p, data) => p === numvfs && refused.has(data) })
    try {
      const eight = { controlPath: QAT, change: { sriovNumvfs: 8 } }
      const sent = rig.reports.length
      await assert.rejects(rig.client.configureDevice(eight), (err) => {
        assert.ok(err instanceof DriverError)
        assert.equal(err.code, 'CONFIGURE_FAILED')
        assert.equal(err.details?.restored, true)
        return true
      })
      assert.equal(rig.reports.length, sent, 'restored: nothing to report')
      refused.add('4')
      await assert.rejects(rig.client.configureDevice(eight), {
        name: 'DriverError',
        code: 'CONFIGURE_FAILED',
      })
      assert.equal(rig.reports.length, sent + 1)
      assert.deepEqual(names(lastReported(rig, QAT)), ['h1_0000:3d:00.0'], 'the host has 0 VFs')
    } finally {
      await rig.agent.stop()
    }
  })
})

void describe('agent RPC 1.6: configureDevice (vGPU type)', () => {
  const bus = createInProcessBus()
  const dirs: string[] = []
  after(async () => {
    await bus.close()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })
  const gpuAgent = (cacheDir: string) =>
    startAgent(bus, 'nvidia-gpu/vgpu', (deps) => [createNvidiaGpuDriver(deps)], { cacheDir })

  void it('offers the chosen type only, saved in the agent cache across a restart', async () => {
    const cacheDir = await mkdtemp(path.join(tmpdir(), 'configure-'))
    dirs.push(cacheDir)
    const first = await gpuAgent(cacheDir)
    try {
      assert.equal(names(lastReported(first, GPU)).length, 2)
      const answer = await first.client.configureDevice({
        controlPath: GPU,
        change: { vgpuType: 'nvidia-319' },
      })
      assert.deepEqual(
        [answer.driver, answer.changed, answer.previous, answer.applied, answer.report.ok],
        [
          'nvidia-gpu',
          true,
          { vgpuTypes: ['nvidia-222', 'nvidia-230', 'nvidia-319'] },
          { vgpuType: 'nvidia-319', vgpuTypes: ['nvidia-319'] },
          true,
        ],
      )
      assert.deepEqual(names(lastReported(first, GPU)), ['h1_0000:3b:00.0_nvidia-319'])
      assert.equal(lastReported(first, GPU).deployables[0]!.numAccelerators, 4)
      await assert.rejects(
        first.client.configureDevice({ controlPath: GPU, change: { vgpuType: 'nvidia-471' } }),
        { name: 'InvalidInputError', code: 'VGPU_TYPE_UNKNOWN' },
      )
    } finally {
      await first.agent.stop()
    }
    // A new agent process: its driver is built from the configuration, the cache brings the choice.
    const second = await gpuAgent(cacheDir)
    try {
      assert.deepEqual(names(lastReported(second, GPU)), ['h1_0000:3b:00.0_nvidia-319'])
      const back = await second.client.configureDevice({
        controlPath: GPU,
        change: { vgpuType: '*' },
      })
      assert.deepEqual(back.applied, { vgpuTypes: ['nvidia-222', 'nvidia-230', 'nvidia-319'] })
      assert.deepEqual(names(lastReported(second, GPU)), [
        'h1_0000:3b:00.0_nvidia-222',
        'h1_0000:3b:00.0_nvidia-319',
      ])
    } finally {
      await second.agent.stop()
    }
  })
})
