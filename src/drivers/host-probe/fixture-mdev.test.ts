/**
 * The mdev simulation of fixture hosts (fixture-mdev.ts) over the recorded host `nvidia-gpu/clean`
 * (one GPU with type nvidia-471: 9 instances left, one recorded mdev): create and remove as the
 * kernel does them, and the refusals.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFixtureHostProbe } from './fixture-host-probe.js'
import { withMdevSimulation } from './fixture-mdev.js'

const TYPE = '/sys/bus/pci/devices/0000:d8:00.0/mdev_supported_types/nvidia-471'
const RECORDED = '6f8c7c4e-0b1a-4f5e-9a55-0d6a3c1c2b11'
const NEW = '0b5e0000-0000-4000-8000-000000000001'
const host = () =>
  withMdevSimulation(createFixtureHostProbe('src/drivers/__fixtures__/nvidia-gpu/clean'))

void describe('fixture host mdevs', () => {
  void it('a uuid written to create makes the mdev; 1 written to its remove takes it away', async () => {
    const h = host()
    await h.writeFile(`${TYPE}/create`, NEW)
    assert.ok(await h.exists(`/sys/bus/mdev/devices/${NEW}/remove`))
    assert.deepEqual(await h.readDir(`${TYPE}/devices`), [NEW, RECORDED].sort())
    assert.equal(await h.readFile(`${TYPE}/available_instances`), '8\n')
    await h.writeFile(`/sys/bus/mdev/devices/${NEW}/remove`, '1')
    assert.equal(await h.exists(`/sys/bus/mdev/devices/${NEW}`), false)
    assert.equal(await h.readFile(`${TYPE}/available_instances`), '9\n')
    assert.deepEqual(
      h.writes.map((w) => w.path),
      [`${TYPE}/create`, `/sys/bus/mdev/devices/${NEW}/remove`],
    )
  })

  void it('a recorded mdev can be removed and created again', async () => {
    const h = host()
    await h.writeFile(`/sys/bus/mdev/devices/${RECORDED}/remove`, '1')
    assert.equal(await h.exists(`/sys/bus/mdev/devices/${RECORDED}`), false)
    assert.deepEqual(await h.readDir(`${TYPE}/devices`), [])
    assert.equal(await h.readFile(`${TYPE}/available_instances`), '10\n')
    await h.writeFile(`${TYPE}/create`, RECORDED)
    assert.ok(await h.exists(`/sys/bus/mdev/devices/${RECORDED}`))
    assert.equal(await h.readFile(`${TYPE}/available_instances`), '9\n')
  })

  void it('refuses a uuid in use, a missing mdev, garbage, and a full type', async () => {
    const h = host()
    await assert.rejects(h.writeFile(`${TYPE}/create`, RECORDED), /EEXIST/)
    await assert.rejects(h.writeFile(`/sys/bus/mdev/devices/${NEW}/remove`, '1'), {
      code: 'HOST_PATH_NOT_FOUND',
    })
    await assert.rejects(h.writeFile(`${TYPE}/create`, 'not-a-uuid'), /EINVAL/)
    for (let i = 0; i < 9; i++)
      await h.writeFile(`${TYPE}/create`, `0b5e0000-0000-4000-8000-00000000001${i}`)
    await assert.rejects(h.writeFile(`${TYPE}/create`, NEW), /EUSERS/)
    assert.equal(h.writes.length, 9, 'refused writes never reach the host')
  })
})
