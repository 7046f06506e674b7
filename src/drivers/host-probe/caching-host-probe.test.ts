import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createCachingHostProbe } from './caching-host-probe.js'
import { createNodeHostProbe } from './node-host-probe.js'
import { DriverError } from '../../domain/errors.js'

void describe('caching host probe', () => {
  void it('reads each path once until reset; a write forgets everything', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'caching-probe-'))
    try {
      const file = path.join(dir, 'vendor')
      await writeFile(file, '0x10de\n')
      const probe = createCachingHostProbe(createNodeHostProbe())
      assert.equal(await probe.readFile(file), '0x10de\n')
      assert.deepEqual(await probe.readDir(dir), ['vendor'])
      // The host changes: the cache answers as before until the next discovery resets it.
      await writeFile(file, '0x8086\n')
      await writeFile(path.join(dir, 'device'), '0x37c8\n')
      assert.equal(await probe.readFile(file), '0x10de\n')
      const listed = await probe.readDir(dir)
      listed.push('mutated by a caller')
      assert.deepEqual(await probe.readDir(dir), ['vendor'])
      probe.reset()
      assert.equal(await probe.readFile(file), '0x8086\n')
      assert.deepEqual(await probe.readDir(dir), ['device', 'vendor'])
      // A write through the probe makes the next reads go to the host.
      await probe.writeFile(path.join(dir, 'driver_override'), 'vfio-pci')
      assert.deepEqual(await probe.readDir(dir), ['device', 'driver_override', 'vendor'])
      // A missing file keeps failing the same way.
      await assert.rejects(probe.readFile(path.join(dir, 'nope')), DriverError)
      await assert.rejects(probe.readFile(path.join(dir, 'nope')), DriverError)
      assert.equal(await probe.exists(path.join(dir, 'nope')), false)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
