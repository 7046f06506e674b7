import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createFixtureHostProbe } from './fixture-host-probe.js'
import { vfAddress } from './fixture-sriov.js'

const QAT = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-qat', 'sriov')
const ROOT = '/sys/bus/pci/devices'
const PF = `${ROOT}/0000:3d:00.0`

void describe('fixture SR-IOV simulation', () => {
  void it('places VF i at the routing id + offset + i × stride', () => {
    assert.equal(vfAddress('0000:3d:00.0', 8, 1, 0), '0000:3d:01.0')
    assert.equal(vfAddress('0000:3d:00.0', 8, 1, 9), '0000:3d:02.1')
    assert.equal(vfAddress('0000:3b:00.1', 79, 1, 0), '0000:3b:0a.0')
    assert.equal(vfAddress('0000:3d:00.0', 8, 2, 3), '0000:3d:01.6')
    assert.equal(vfAddress('0000:3d:1f.0', 8, 1, 0), '0000:3e:00.0', 'the next bus')
    assert.equal(vfAddress('0000:ff:1f.7', 1, 1, 0), undefined, 'past the last bus')
  })

  void it('refuses what the kernel refuses: over sriov_totalvfs, garbage, a change between two counts', async () => {
    const probe = createFixtureHostProbe(QAT)
    const numvfs = `${PF}/sriov_numvfs`
    await assert.rejects(probe.writeFile(numvfs, '17'), {
      code: 'HOST_IO_ERROR',
      message: /ERANGE$/,
    })
    await assert.rejects(probe.writeFile(numvfs, 'many'), { message: /EINVAL$/ })
    await assert.rejects(probe.writeFile(numvfs, '8'), { message: /EBUSY$/ })
    await probe.writeFile(numvfs, '4')
    assert.equal(await probe.readFile(numvfs), '4\n')
    assert.ok(await probe.exists(`${ROOT}/0000:3d:01.3/vendor`), 'the same count changes nothing')
    assert.deepEqual(
      probe.writes.map((w) => [w.data, w.failed ?? false]),
      [
        ['17', true],
        ['many', true],
        ['8', true],
        ['4', false],
      ],
    )
  })

  void it('lays out VFs as recorded fixtures are, and removes them with 0', async () => {
    const probe = createFixtureHostProbe(QAT)
    await probe.writeFile(`${PF}/sriov_numvfs`, '0')
    assert.deepEqual(await probe.readDir(ROOT), ['0000:3d:00.0', '0000:6b:00.0'])
    assert.equal((await probe.readDir(PF)).filter((e) => e.startsWith('virtfn')).length, 0)
    await assert.rejects(probe.readFile(`${ROOT}/0000:3d:01.0/vendor`), {
      code: 'HOST_PATH_NOT_FOUND',
    })

    await probe.writeFile(`${PF}/sriov_numvfs`, '2')
    assert.deepEqual(await probe.readDir(ROOT), [
      '0000:3d:00.0',
      '0000:3d:01.0',
      '0000:3d:01.1',
      '0000:6b:00.0',
    ])
    assert.deepEqual(
      (await probe.readDir(PF)).filter((e) => e.startsWith('virtfn')),
      ['virtfn0', 'virtfn1'],
    )
    assert.match(await probe.readFile(`${PF}/virtfn1/uevent`), /^PCI_SLOT_NAME=0000:3d:01\.1$/m)
    const vf = `${ROOT}/0000:3d:01.1`
    assert.deepEqual(await probe.readDir(vf), ['class', 'device', 'physfn', 'uevent', 'vendor'])
    assert.equal(await probe.readFile(`${vf}/device`), '0x37c9\n')
    assert.equal(await probe.readFile(`${vf}/class`), '0x0b4000\n')
    assert.equal(await probe.readFile(`${vf}/physfn/uevent`), 'PCI_SLOT_NAME=0000:3d:00.0\n')

    // A write under a VF stays with it, and goes with it.
    await probe.writeFile(`${vf}/reset`, '1')
    assert.equal(await probe.readFile(`${vf}/reset`), '1')
    await probe.writeFile(`${PF}/sriov_numvfs`, '0')
    assert.equal(await probe.exists(vf), false)
    await assert.rejects(probe.writeFile(`${vf}/reset`, '1'), { message: /ENOENT$/ })
  })

  void it('defaults: offset 128, stride 1, the PF’s device id; a PF without sriov_totalvfs is a plain write', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sriov-'))
    try {
      const pf = path.join(dir, 'sys/bus/pci/devices/0000:5e:00.0')
      await mkdir(pf, { recursive: true })
      await writeFile(path.join(pf, 'vendor'), '0x8086\n')
      await writeFile(path.join(pf, 'device'), '0x1572\n')
      await writeFile(path.join(pf, 'sriov_totalvfs'), '4\n')
      const other = path.join(dir, 'sys/bus/pci/devices/0000:5f:00.0')
      await mkdir(other, { recursive: true })
      const probe = createFixtureHostProbe(dir)
      await probe.writeFile(`${ROOT}/0000:5e:00.0/sriov_numvfs`, '2')
      assert.deepEqual(await probe.readDir(ROOT), [
        '0000:5e:00.0',
        '0000:5e:10.0',
        '0000:5e:10.1',
        '0000:5f:00.0',
      ])
      assert.equal(await probe.readFile(`${ROOT}/0000:5e:10.1/device`), '0x1572\n')
      await probe.writeFile(`${ROOT}/0000:5f:00.0/sriov_numvfs`, '3')
      assert.equal(await probe.readFile(`${ROOT}/0000:5f:00.0/sriov_numvfs`), '3')
    } finally {
      await rm(dir, { recursive: true })
    }
  })
})
