/**
 * scripts/record-host.sh (docs/drivers.md, "Recording a host"): every driver fixture, recorded
 * through SYSFS_ROOT with stand-in tools that print its command outputs, replays through the
 * fixture HostProbe into the same devices, health and telemetry samples for every driver; the
 * recorder writes nothing outside its output directory, refuses one that is not empty, and skips
 * the tools that are not installed.
 */
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DRIVERS } from '../../src/drivers/index.js'
import type { AcceleratorDriver, DriverFactory } from '../../src/drivers/driver.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { hasDeviceStats } from '../../src/agent/telemetry.js'
import { FIXTURES, fixtureTools, recordHost } from '../support/recording.js'

const ALL_PCI = { device_spec: '{"vendor_id": "*"}' }

/** Every `<driver>/<case>` fixture that records a host (sysfs or command outputs). */
async function fixtureCases(): Promise<{ driver: string; name: string; dir: string }[]> {
  const out = []
  for (const driver of (await readdir(FIXTURES)).sort()) {
    if (driver === 'remote') continue
    for (const name of (await readdir(path.join(FIXTURES, driver))).sort())
      out.push({ driver, name, dir: path.join(FIXTURES, driver, name) })
  }
  return out
}

/** Every driver over `dir`: the case's options for its driver, every PCI function for `pci`. */
async function drivers(
  dir: string,
  c: { driver: string; dir: string },
): Promise<AcceleratorDriver[]> {
  const own = c.driver
  const options = JSON.parse(
    await readFile(path.join(c.dir, 'options.json'), 'utf8').catch(() => '{}'),
  ) as Record<string, string>
  return Object.entries(DRIVERS)
    .filter(([name]) => name !== 'remote' && name !== 'fake')
    .map(([name, factory]) =>
      (factory as DriverFactory)(
        { host: createFixtureHostProbe(dir), hostname: 'compute-1' },
        name === own ? options : name === 'pci' ? ALL_PCI : {},
      ),
    )
}

/** What each driver finds (or the error code it throws), and its device samples. */
async function seen(list: AcceleratorDriver[]) {
  return Promise.all(
    list.map(async (d) => ({
      driver: d.name,
      devices: await d.discover().catch((err: { code?: string }) => `throws ${err.code}`),
      samples: hasDeviceStats(d) ? await d.deviceStats() : [],
    })),
  )
}

/** A digest of every path and file content under `dir`. */
async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256')
  for (const entry of (await readdir(dir, { recursive: true })).sort()) {
    const file = path.join(dir, entry)
    hash.update(entry)
    if ((await stat(file)).isFile()) hash.update(await readFile(file))
  }
  return hash.digest('hex')
}

describe('scripts/record-host.sh', () => {
  let tmp: string
  before(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'record-host-'))
  })
  after(() => rm(tmp, { recursive: true, force: true }))

  it('every driver fixture, recorded and replayed, gives every driver the same devices, health and samples', async () => {
    const cases = await fixtureCases()
    assert.ok(cases.length >= 30, `${cases.length} fixture cases`)
    const found = { devices: 0, samples: 0 }
    for (const c of cases) {
      const at = path.join(tmp, 'all', c.driver, c.name)
      const bin = path.join(at, 'bin')
      await mkdir(bin, { recursive: true })
      await fixtureTools(c.dir, bin)
      const out = path.join(at, 'out')
      const run = await recordHost(out, { SYSFS_ROOT: path.join(c.dir, 'sys'), TOOLS_PATH: bin })
      assert.equal(run.code, 0, `${c.driver}/${c.name}: ${run.stderr}`)
      const original = await seen(await drivers(c.dir, c))
      const replayed = await seen(await drivers(out, c))
      assert.deepEqual(replayed, original, `${c.driver}/${c.name}`)
      for (const r of original) {
        found.devices += typeof r.devices === 'string' ? 0 : r.devices.length
        found.samples += r.samples.length
      }
    }
    // Not trivially equal: the drivers find 140 devices and 10 samples in the cases.
    assert.ok(found.devices >= 100 && found.samples >= 8, JSON.stringify(found))
  })

  it('writes only into its output directory, and refuses one that is not empty', async () => {
    const fixture = path.join(FIXTURES, 'nvidia-gpu/sriov-vfs')
    const before = await treeDigest(fixture)
    const bin = path.join(tmp, 'sriov-bin')
    await mkdir(bin)
    assert.deepEqual(await fixtureTools(fixture, bin), ['lspci', 'nvidia-smi'])
    const out = path.join(tmp, 'sriov-out')
    const cwd = path.join(tmp, 'sriov-cwd')
    await mkdir(cwd)
    const env = { SYSFS_ROOT: path.join(fixture, 'sys'), TOOLS_PATH: bin }
    assert.equal((await recordHost(out, env, cwd)).code, 0)
    assert.equal(await treeDigest(fixture), before)
    assert.deepEqual(await readdir(cwd), [])
    assert.ok((await readdir(path.join(out, 'sys/bus/pci/devices'))).includes('0000:3b:00.0'))
    const commands = JSON.parse(await readFile(path.join(out, 'commands.json'), 'utf8')) as object
    assert.deepEqual(commands, {
      'lspci -nnD': 'lspci-nnD.txt',
      'nvidia-smi -q -x': 'nvidia-smi-q-x.xml',
    })
    const again = await recordHost(out, env)
    assert.equal(again.code, 2)
    assert.match(again.stderr, /is not empty; give a new or empty directory/)
  })

  it('skips the tools that are not installed, and says so', async () => {
    const empty = path.join(tmp, 'no-tools')
    await mkdir(empty)
    const out = path.join(tmp, 'no-tools-out')
    const sys = path.join(FIXTURES, 'nvidia-gpu/ecc/sys')
    const run = await recordHost(out, { SYSFS_ROOT: sys, TOOLS_PATH: empty })
    assert.equal(run.code, 0, run.stderr)
    const source = await readFile(path.join(out, 'SOURCE'), 'utf8')
    assert.match(source, /: 2 PCI functions, 0 NVMe controllers\./)
    for (const line of ['lspci -nnD', 'lspci -nnkD', 'nvidia-smi -q -x', 'nvme list -o json'])
      assert.ok(source.includes(`${line}: ${line.split(' ')[0]} not installed, skipped`), source)
    assert.deepEqual(JSON.parse(await readFile(path.join(out, 'commands.json'), 'utf8')), {})
    assert.deepEqual((await readdir(out)).sort(), ['SOURCE', 'commands.json', 'sys'])
  })
})
