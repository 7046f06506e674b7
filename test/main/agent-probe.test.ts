/**
 * `cyborg agent probe` (docs/cli.md) as an operator runs it (bin/cyborg), on a fixture host: the
 * nvidia-gpu/ecc tree under `[agent] host_root` with a stand-in `nvidia-smi` printing its recorded
 * XML. It reports the fixture's inventory, health with evidence, telemetry and every access, writes
 * nothing (the tree, the state path), needs no bus or database (both point nowhere), replays a
 * recording of scripts/record-host.sh into the same report, and fails in one line on bad config.
 */
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cyborg, cyborgFails, cyborgJson } from '../support/cli.js'
import { fixtureHost, type FixtureHost } from '../support/fixture-host.js'
import { FIXTURES, recordHost } from '../support/recording.js'
import { normalizeDevices } from '../../src/agent/snapshot.js'
import type { ProbeReport } from '../../src/main/commands/agent-probe.js'
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'

const GPU_A = '0000:3b:00.0'

describe('cyborg agent probe', () => {
  let tmp: string
  let host: FixtureHost
  let bin: string
  let env: Record<string, string>
  /** Every file of the host tree and its content, to show that nothing was written. */
  let tree: () => Promise<string>

  before(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'agent-probe-'))
    host = await fixtureHost('compute-1', 'nvidia-gpu/ecc')
    bin = path.join(tmp, 'bin')
    await mkdir(bin)
    const xml = path.join(tmp, 'nvidia-smi-q-x.xml')
    await copyFile(path.join(FIXTURES, 'nvidia-gpu/ecc/nvidia-smi-q-x.xml'), xml)
    await writeFile(
      path.join(bin, 'nvidia-smi'),
      `#!/bin/sh\n[ "$*" = "-q -x" ] && exec cat '${xml}'\nexit 9\n`,
    )
    // lspci is not recorded for this host: the stand-in fails, as on a host without one.
    await writeFile(path.join(bin, 'lspci'), '#!/bin/sh\nexit 1\n')
    await chmod(path.join(bin, 'nvidia-smi'), 0o755)
    await chmod(path.join(bin, 'lspci'), 0o755)
    env = {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      CYBORG_DEFAULT__HOST: 'compute-1',
      CYBORG_DEFAULT__STATE_PATH: path.join(tmp, 'state'),
      CYBORG_DEFAULT__TRANSPORT_URL: 'rabbit://nobody:nothing@127.0.0.1:9/',
      CYBORG_DATABASE__CONNECTION: 'postgresql://nobody:nothing@127.0.0.1:9/cyborg',
      CYBORG_AGENT__HOST_ROOT: host.root,
      CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu,intel-qat',
    }
    tree = async () => {
      const files = (await readdir(host.root, { recursive: true })).sort()
      const parts = await Promise.all(
        files.map(
          async (f) => `${f}=${await readFile(path.join(host.root, f), 'utf8').catch(() => '/')}`,
        ),
      )
      return parts.join('\n')
    }
  })
  after(async () => {
    await host.remove()
    await rm(tmp, { recursive: true, force: true })
  })

  it('reports the inventory, health with its evidence, telemetry and every access; writes nothing', async () => {
    const before = await tree()
    const report = await cyborgJson<ProbeReport>(['agent', 'probe'], env)
    assert.equal(await tree(), before)
    assert.equal(existsSync(path.join(tmp, 'state')), false, 'no state directory made')
    assert.equal(report.host, 'compute-1')
    assert.deepEqual(report.source, { kind: 'host', root: host.root })
    assert.deepEqual(
      report.drivers.map((d) => [d.name, d.ok, d.deviceCount]),
      [
        ['nvidia-gpu', true, 2],
        ['intel-qat', true, 0],
      ],
    )
    const expected = JSON.parse(
      await readFile(path.join(FIXTURES, 'nvidia-gpu/ecc/expected.json'), 'utf8'),
    ) as DiscoveredDevice[]
    assert.deepEqual(report.inventory.devices, normalizeDevices(expected))
    assert.match(report.inventory.hash, /^[0-9a-f]{64}$/)
    const [a, b] = report.health
    assert.equal(a?.controlPath, GPU_A)
    assert.equal(a?.state, 'failed')
    assert.match(a?.reason ?? '', /2 uncorrectable ECC errors/)
    assert.ok(a?.evidence.includes('exec nvidia-smi -q -x: ok'), a?.evidence.join('\n'))
    assert.ok(a?.evidence.includes(`read /sys/bus/pci/devices/${GPU_A}/aer_dev_fatal: ok`))
    assert.ok(!a?.evidence.some((e) => e.includes('0000:d8:00.0')))
    assert.deepEqual([b?.controlPath, b?.state], ['0000:d8:00.0', 'ok'])
    assert.deepEqual(
      report.telemetry.map((s) => [s.controlPath, s.values.utilization_ratio]),
      [
        [GPU_A, 0.45],
        ['0000:d8:00.0', 0],
      ],
    )
    const gpu = report.drivers[0]!.accesses
    assert.ok(
      gpu.some((x) => x.op === 'exec' && x.target === 'lspci -nnD' && x.outcome === 'failed'),
    )
    assert.ok(gpu.every((x) => x.op !== 'write' && typeof x.ms === 'number' && x.ms >= 0))
    assert.ok(report.drivers[1]!.accesses.some((x) => x.target === '/sys/bus/pci/devices'))
  })

  it('prints tables for people', async () => {
    const run = await cyborg(['agent', 'probe'], env)
    assert.equal(run.code, 0, run.stderr)
    for (const text of [
      `cyborg agent probe: host compute-1, files under ${host.root} (read-only)`,
      'Inventory (2 devices, hash ',
      `Evidence of ${GPU_A}:`,
      '  exec nvidia-smi -q -x: ok',
      'Host accesses',
      '45%',
    ])
      assert.ok(run.stdout.includes(text), `${text} in:\n${run.stdout}`)
    assert.match(run.stdout, new RegExp(`${GPU_A} +nvidia-gpu +failed +2 uncorrectable ECC`))
  })

  it('replays a recording of scripts/record-host.sh into the same report', async () => {
    const out = path.join(tmp, 'recording')
    const recorded = await recordHost(out, {
      SYSFS_ROOT: path.join(host.root, 'sys'),
      TOOLS_PATH: bin,
    })
    assert.equal(recorded.code, 0, recorded.stderr)
    const live = await cyborgJson<ProbeReport>(['agent', 'probe'], env)
    const replay = await cyborgJson<ProbeReport>(['agent', 'probe', '--replay', out], env)
    assert.deepEqual(replay.source, { kind: 'replay', dir: out })
    assert.deepEqual(replay.inventory, live.inventory)
    assert.deepEqual(replay.telemetry, live.telemetry)
    const verdicts = (r: ProbeReport) => r.health.map(({ evidence: _, ...h }) => h)
    assert.deepEqual(verdicts(replay), verdicts(live))
  })

  it('exits 0 on a host with nothing to find', async () => {
    const empty = path.join(tmp, 'empty-host')
    await mkdir(empty)
    const report = await cyborgJson<ProbeReport>(['agent', 'probe'], {
      ...env,
      CYBORG_AGENT__HOST_ROOT: empty,
      CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu,nvme-ssd,intel-qat',
    })
    assert.deepEqual(report.inventory.devices, [])
    assert.deepEqual(
      report.drivers.map((d) => [d.name, d.ok]),
      [
        ['nvidia-gpu', true],
        ['nvme-ssd', true],
        ['intel-qat', true],
      ],
    )
  })

  it('fails in one line on a bad configuration or --replay', async () => {
    await cyborgFails(
      ['agent', 'probe'],
      { ...env, CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu,quantum' },
      /enabled_drivers.*unknown driver "quantum"; possible values are: fake, pci/,
    )
    await cyborgFails(
      ['agent', 'probe', '--replay', path.join(tmp, 'no-such-dir')],
      env,
      /^cyborg agent probe: --replay .*no-such-dir: not a directory\n$/,
    )
    await cyborgFails(
      ['agent', 'probe'],
      { ...env, CYBORG_NVIDIA_GPU__ECC_UNCORRECTABLE_FAILED: 'lots' },
      /nvidia_gpu/,
    )
  })
})
