import path from 'node:path'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFixtureHostProbe } from './fixture-host-probe.js'
import { createReadOnlyHostProbe } from './read-only-host-probe.js'
import { isReadOnlyCommand } from './read-only-commands.js'
import { createIntelQatDriver } from '../intel-qat/intel-qat.js'
import { AppError } from '../../domain/errors.js'

const FIXTURES = path.join(import.meta.dirname, '../__fixtures__')
const GPU = '/sys/bus/pci/devices/0000:3b:00.0'

/** A read-only probe over a fixture, with a clock that ticks 1 ms per reading. */
function over(fixture: string) {
  const inner = createFixtureHostProbe(path.join(FIXTURES, fixture))
  let t = 0
  return { inner, probe: createReadOnlyHostProbe(inner, () => t++) }
}

async function refused(call: Promise<unknown>, operation: string, target: string) {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof AppError)
    assert.equal(err.code, 'HOST_READ_ONLY')
    assert.deepEqual(err.details, { operation, target })
    assert.match(err.message, /^read-only host probe: refused /)
    assert.ok(err.message.includes(target), err.message)
    return true
  })
}

describe('read-only host probe', () => {
  it('passes reads through and records each with its outcome and time', async () => {
    const { probe } = over('nvidia-gpu/ecc')
    assert.equal((await probe.readFile(`${GPU}/vendor`)).trim(), '0x10de')
    assert.ok((await probe.readDir('/sys/bus/pci/devices')).includes('0000:3b:00.0'))
    assert.equal(await probe.exists(`${GPU}/sriov_totalvfs`), false)
    await assert.rejects(probe.readFile(`${GPU}/no-such-file`))
    assert.match(await probe.exec('nvidia-smi', ['-q', '-x']), /<nvidia_smi_log>/)
    await assert.rejects(probe.exec('lspci', ['-nnD']), { code: 'COMMAND_NOT_FOUND' })
    assert.deepEqual(
      probe.accesses.map(({ op, target, outcome, ms }) => ({ op, target, outcome, ms })),
      [
        { op: 'read', target: `${GPU}/vendor`, outcome: 'ok', ms: 1 },
        { op: 'list', target: '/sys/bus/pci/devices', outcome: 'ok', ms: 1 },
        { op: 'exists', target: `${GPU}/sriov_totalvfs`, outcome: 'missing', ms: 1 },
        { op: 'read', target: `${GPU}/no-such-file`, outcome: 'missing', ms: 1 },
        { op: 'exec', target: 'nvidia-smi -q -x', outcome: 'ok', ms: 1 },
        { op: 'exec', target: 'lspci -nnD', outcome: 'missing', ms: 1 },
      ],
    )
    assert.match(probe.accesses[3]!.error!, /^HOST_PATH_NOT_FOUND: /)
  })

  it('refuses every sysfs write the agent and drivers make, before it reaches the host', async () => {
    const { inner, probe } = over('nvidia-gpu/vgpu')
    const writes: [string, string][] = [
      [`${GPU}/driver_override`, 'vfio-pci'],
      [`${GPU}/driver/unbind`, '0000:3b:00.0'],
      ['/sys/bus/pci/drivers_probe', '0000:3b:00.0'],
      [`${GPU}/mdev_supported_types/nvidia-222/create`, '6f8c7c4e-0b1a-4f5e-9a55-0d6a3c1c2b12'],
      ['/sys/bus/mdev/devices/6f8c7c4e-0b1a-4f5e-9a55-0d6a3c1c2b11/remove', '1'],
      [`${GPU}/sriov_numvfs`, '4'],
      [`${GPU}/reset`, '1'],
    ]
    for (const [file, data] of writes) await refused(probe.writeFile(file, data), 'write', file)
    assert.deepEqual(inner.writes, [])
    assert.deepEqual(
      probe.accesses.map((a) => [a.op, a.target, a.outcome, a.ms]),
      writes.map(([file]) => ['write', file, 'refused', 0]),
    )
  })

  it('refuses commands that change the host, and tools it does not know', async () => {
    const { inner, probe } = over('nvidia-gpu/ecc')
    const commands: [string, string[]][] = [
      ['nvidia-smi', ['--gpu-reset', '-i', '0']],
      ['nvidia-smi', ['-q', '-f', '/etc/motd']],
      ['nvidia-smi', ['-pm', '1']],
      ['nvme', ['sanitize', '/dev/nvme0', '--sanact=2']],
      ['nvme', ['format', '/dev/nvme0n1', '--ses=1', '--force']],
      ['nvme', ['reset', '/dev/nvme0']],
      ['/usr/bin/fpgaconf', ['--bus', '0x3b', '--device', '0x00', '--function', '0x0', 'x.gbs']],
      ['/opt/xilinx/xrt/bin/xbmgmt', ['program', '--device', '0000:3b:00.0', '--base']],
      ['fpgainfo', ['errors', 'all', '--clear']],
      ['setpci', ['-s', '3b:00.0', 'COMMAND=0']],
      ['sh', ['-c', 'echo 1 > /sys/bus/pci/rescan']],
    ]
    for (const [command, args] of commands) {
      const line = [command, ...args].join(' ')
      await refused(probe.exec(command, args), 'exec', line)
    }
    assert.deepEqual(inner.execs, [])
    assert.ok(probe.accesses.every((a) => a.outcome === 'refused'))
  })

  it('a driver’s configure through it writes nothing: the write is refused and recorded', async () => {
    const { inner, probe } = over('intel-qat/sriov')
    const driver = createIntelQatDriver({ host: probe, hostname: 'compute-1' })
    const device = (await driver.discover()).find(
      (d) => d.controlPath.type === 'PCI' && d.controlPath.info.bus === '3d',
    )
    assert.ok(device, 'the C62x PF with 4 VFs')
    await assert.rejects(driver.configure!(device, { sriovNumvfs: 2 }))
    assert.deepEqual(inner.writes, [])
    const write = probe.accesses.find((a) => a.op === 'write')
    assert.equal(write?.outcome, 'refused')
    assert.match(write!.target, /\/sriov_numvfs$/)
  })
})

describe('read-only commands', () => {
  it('knows the drivers’ reads', () => {
    for (const [command, args] of [
      ['lspci', ['-nnD']],
      ['lspci', ['-nnkD']],
      ['nvidia-smi', ['-q', '-x']],
      ['nvidia-smi', ['--query-gpu=index,pci.bus_id', '--format=csv']],
      ['nvme', ['list', '-o', 'json']],
      ['nvme', ['smart-log', '/dev/nvme0', '-o', 'json']],
      ['nvme', ['id-ctrl', '/dev/nvme0', '-o', 'json']],
      ['nvme', ['sanitize-log', '/dev/nvme0', '-o', 'json']],
      ['/usr/bin/fpgainfo', ['temp']],
      ['/opt/xilinx/xrt/bin/xbmgmt', ['examine']],
    ] as const)
      assert.equal(isReadOnlyCommand(command, args), true, `${command} ${args.join(' ')}`)
  })

  it('refuses an empty argument list of a tool whose reads need a subcommand', () => {
    assert.equal(isReadOnlyCommand('nvme', []), false)
    assert.equal(isReadOnlyCommand('nvidia-smi', []), false)
    assert.equal(isReadOnlyCommand('fpgaconf', []), false)
  })
})
