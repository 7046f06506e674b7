import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createNodeHostProbe } from './node-host-probe.js'
import { DriverError } from '../../domain/errors.js'

void describe('node host probe', () => {
  const probe = createNodeHostProbe({ execTimeoutMs: 2000 })
  const node = process.execPath

  void it('reads, lists, checks and writes files', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'probe-'))
    try {
      await probe.writeFile(path.join(dir, 'b'), 'two')
      await probe.writeFile(path.join(dir, 'a'), 'one')
      assert.equal(await probe.readFile(path.join(dir, 'a')), 'one')
      assert.deepEqual(await probe.readDir(dir), ['a', 'b'])
      assert.equal(await probe.exists(path.join(dir, 'b')), true)
      assert.equal(await probe.exists(path.join(dir, 'c')), false)
      await assert.rejects(probe.readFile(path.join(dir, 'c')), {
        name: 'DriverError',
        code: 'HOST_PATH_NOT_FOUND',
      })
    } finally {
      await rm(dir, { recursive: true })
    }
  })

  void it('runs commands without a shell and reports failures as DriverError', async () => {
    assert.equal(
      await probe.exec(node, ['-e', 'process.stdout.write(process.argv[1])', '$HOME;x']),
      '$HOME;x',
    )
    await assert.rejects(
      probe.exec(node, ['-e', 'console.error("bad"); process.exit(3)']),
      (err) => {
        assert.ok(err instanceof DriverError)
        assert.equal(err.code, 'COMMAND_FAILED')
        assert.equal(err.details?.exitCode, 3)
        assert.match(err.message, /bad/)
        return true
      },
    )
    await assert.rejects(probe.exec('/no/such/cmd', []), { code: 'COMMAND_NOT_FOUND' })
  })

  void it('kills a command that runs too long', async () => {
    const quick = createNodeHostProbe({ execTimeoutMs: 100 })
    await assert.rejects(quick.exec(node, ['-e', 'setTimeout(() => {}, 5000)']), {
      code: 'COMMAND_TIMEOUT',
    })
  })

  void it('lets one call ask for a longer or shorter time limit', async () => {
    const quick = createNodeHostProbe({ execTimeoutMs: 100 })
    const slow = ['-e', 'setTimeout(() => process.stdout.write("done"), 300)']
    assert.equal(await quick.exec(node, slow, { timeoutMs: 3000 }), 'done')
    await assert.rejects(probe.exec(node, slow, { timeoutMs: 50 }), {
      code: 'COMMAND_TIMEOUT',
      message: /50 ms/,
    })
  })
})

void describe('node host probe under a host root ([agent] host_root)', () => {
  void it('reads and writes host paths under the root', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'probe-root-'))
    try {
      const probe = createNodeHostProbe({ root })
      await mkdir(path.join(root, 'sys/bus/pci/devices/0000:3b:00.0'), { recursive: true })
      await probe.writeFile('/sys/bus/pci/devices/0000:3b:00.0/vendor', '0x10de\n')
      assert.equal(
        await readFile(path.join(root, 'sys/bus/pci/devices/0000:3b:00.0/vendor'), 'utf8'),
        '0x10de\n',
      )
      assert.equal(await probe.readFile('/sys/bus/pci/devices/0000:3b:00.0/vendor'), '0x10de\n')
      assert.deepEqual(await probe.readDir('/sys/bus/pci/devices'), ['0000:3b:00.0'])
      assert.equal(await probe.exists('/sys/bus/pci/devices/0000:3b:00.0'), true)
      assert.equal(await probe.exists('/sys/class/nvme'), false)
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})
