import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { commandSlug, createFixtureHostProbe } from './fixture-host-probe.js'

void describe('fixture host probe', () => {
  void it('replays files, commands and records writes', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'fixture-'))
    try {
      const devdir = path.join(dir, 'sys/bus/pci/devices/0000:0c:00.0')
      await mkdir(devdir, { recursive: true })
      await writeFile(path.join(devdir, 'vendor'), '0x8086\n')
      await writeFile(path.join(dir, 'lspci-nnn-D.txt'), 'lspci output\n')
      await writeFile(path.join(dir, 'smi.xml'), '<xml/>')
      await writeFile(
        path.join(dir, 'commands.json'),
        JSON.stringify({ 'nvidia-smi -q -x': 'smi.xml' }),
      )
      const probe = createFixtureHostProbe(dir)

      assert.equal(await probe.readFile('/sys/bus/pci/devices/0000:0c:00.0/vendor'), '0x8086\n')
      assert.deepEqual(await probe.readDir('/sys/bus/pci/devices'), ['0000:0c:00.0'])
      assert.equal(await probe.exists('/sys/bus/pci/devices/0000:0c:00.0/device'), false)
      assert.equal(await probe.exec('lspci', ['-nnn', '-D']), 'lspci output\n')
      assert.equal(await probe.exec('nvidia-smi', ['-q', '-x']), '<xml/>')
      await assert.rejects(probe.exec('lspci', ['-k']), { code: 'COMMAND_NOT_FOUND' })
      await assert.rejects(probe.readFile('/../../etc/passwd'), { code: 'HOST_PATH_NOT_FOUND' })

      await probe.writeFile('/sys/bus/pci/devices/0000:0c:00.0/driver_override', 'vfio-pci')
      assert.equal(
        await probe.readFile('/sys/bus/pci/devices/0000:0c:00.0/driver_override'),
        'vfio-pci',
      )
      assert.deepEqual(probe.writes, [
        { path: '/sys/bus/pci/devices/0000:0c:00.0/driver_override', data: 'vfio-pci' },
      ])
      assert.equal(commandSlug('nvidia-smi', ['-q', '-x']), 'nvidia-smi-q-x')
      assert.deepEqual(
        probe.execs.map((e) => [e.command, ...e.args].join(' ')),
        ['lspci -nnn -D', 'nvidia-smi -q -x', 'lspci -k'],
      )
    } finally {
      await rm(dir, { recursive: true })
    }
  })

  void it('answers given outputs and records every exec with its options', async () => {
    const probe = createFixtureHostProbe('/nonexistent', { outputs: { 'fpgaconf /x.gbs': 'ok\n' } })
    assert.equal(await probe.exec('fpgaconf', ['/x.gbs'], { timeoutMs: 5 }), 'ok\n')
    await assert.rejects(probe.exec('fpgaconf', ['/y.gbs']), { name: 'DriverError' })
    assert.deepEqual(probe.execs, [
      { command: 'fpgaconf', args: ['/x.gbs'], options: { timeoutMs: 5 } },
      { command: 'fpgaconf', args: ['/y.gbs'] },
    ])
  })
})
