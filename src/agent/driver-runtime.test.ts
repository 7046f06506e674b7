/** Agent RPC 1.2's runtime driver management: enable, disable and re-option drivers, kept in the cache. */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { CACHE_FILES } from './local-cache.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { InvalidInputError, NotFoundError } from '../domain/errors.js'
import { reported, startRig } from '../../test/support/agent-rig.js'

void describe('agent RPC 1.2: runtime driver management', () => {
  const bus = createInProcessBus()
  const dirs: string[] = []
  after(async () => {
    await bus.close()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  void it('disabling a driver drops its devices from the next report; enabling brings them back', async () => {
    const rig = await startRig(bus)
    try {
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
      const off = await rig.client.setDriverEnabled({ driver: 'xilinx-fpga', enabled: false })
      assert.equal(off.enabled, false)
      assert.equal(off.report.ok, true)
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      await rig.agent.discoverNow()
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      await rig.client.setDriverEnabled({ driver: 'xilinx-fpga', enabled: true })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('refuses unknown drivers, naming the known ones, and bad values', async () => {
    const rig = await startRig(bus)
    try {
      await assert.rejects(
        rig.client.setDriverEnabled({ driver: 'nvidia-gpu', enabled: false }),
        (err) => {
          assert.ok(err instanceof NotFoundError)
          assert.equal(
            err.message,
            'driver nvidia-gpu is not configured on this agent; known drivers: fake, intel-fpga, xilinx-fpga, pci, gpu-kit',
          )
          return true
        },
      )
      await assert.rejects(
        rig.client.setDriverEnabled({ driver: 'fake', enabled: 'no' as unknown as boolean }),
        { name: 'InvalidInputError' },
      )
      await assert.rejects(rig.client.updateDriverOptions({ driver: 'nope', options: {} }), {
        name: 'NotFoundError',
        code: 'DRIVER_NOT_FOUND',
      })
      await assert.rejects(
        rig.client.updateDriverOptions({ driver: 'pci', options: { x: 1 as unknown as string } }),
        { name: 'InvalidInputError' },
      )
    } finally {
      await rig.agent.stop()
    }
  })

  void it('rebuilds a driver with merged options, and keeps the old one when the factory refuses them', async () => {
    const rig = await startRig(bus)
    try {
      const changed = await rig.client.updateDriverOptions({
        driver: 'xilinx-fpga',
        options: { lspci: '/opt/none/lspci' },
      })
      assert.deepEqual(changed.options, { lspci: '/opt/none/lspci' })
      assert.deepEqual(changed.overrides, { lspci: '/opt/none/lspci' })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      assert.ok(rig.host.execs.some((e) => e.command === '/opt/none/lspci'))
      await rig.client.updateDriverOptions({ driver: 'xilinx-fpga', options: { lspci: 'lspci' } })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
      const before = rig.reports.length
      await assert.rejects(
        rig.client.updateDriverOptions({
          driver: 'pci',
          options: { device_spec: '{"vendor_id": "zz"}' },
        }),
        (err) => {
          assert.ok(err instanceof InvalidInputError)
          assert.match(err.message, /^driver pci refused the options: /)
          return true
        },
      )
      assert.equal(rig.reports.length, before)
      await rig.agent.discoverNow()
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('keeps driver settings in the agent cache across a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-agent-admin-'))
    dirs.push(dir)
    const first = await startRig(bus, { cacheDir: dir })
    await first.client.setDriverEnabled({ driver: 'fake', enabled: false })
    await first.client.updateDriverOptions({
      driver: 'xilinx-fpga',
      options: { lspci: '/opt/none/lspci' },
    })
    await first.agent.stop()
    const text = await readFile(path.join(dir, CACHE_FILES.driverSettings), 'utf8')
    assert.match(text, /^cyborg-agent-cache 1 sha256=[0-9a-f]{64}\n/)

    const second = await startRig(bus, { cacheDir: dir })
    try {
      assert.deepEqual(reported(second), ['1b:00.0', 'af:00.0'])
      const back = await second.client.setDriverEnabled({ driver: 'fake', enabled: true })
      assert.deepEqual(back.overrides, {})
      assert.deepEqual(reported(second), ['0c:00.0', '1b:00.0', 'af:00.0'])
    } finally {
      await second.agent.stop()
    }
  })
})
