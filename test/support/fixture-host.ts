/**
 * A fake compute host for multi-process tests: a copy of a driver fixture's sysfs tree in a temp
 * dir (the agent reads it through `[agent] host_root`), and what the driver should report from it
 * (the fixture's expected.json with its host name replaced), kept in step as the test edits the tree.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ROOT } from './service.js'

/** One deployable as the fixtures' expected.json has it. */
export interface ExpectedDeployable {
  name: string
  numAccelerators: number
  attributes: { key: string; value: string }[]
}

export interface ExpectedDevice {
  controlPath: { info: Record<string, string> }
  deployables: ExpectedDeployable[]
}

export interface FixtureHost {
  host: string
  /** `[agent] host_root`: the tree's root (it holds `sys/`). */
  root: string
  /** What the agent should report now; edit it together with the tree. */
  expected: ExpectedDevice[]
  remove(): Promise<void>
}

const FIXTURES = path.join(ROOT, 'src/drivers/__fixtures__')
/** The host name the fixtures were recorded with (it prefixes every deployable name). */
const FIXTURE_HOST = 'compute-1'

/** Copies `src/drivers/__fixtures__/<fixture>` (e.g. `intel-qat/pf-vfs`) for a host named `host`. */
export async function fixtureHost(host: string, fixture: string): Promise<FixtureHost> {
  const root = await mkdtemp(path.join(tmpdir(), `cyborg-host-${host}-`))
  await cp(path.join(FIXTURES, fixture, 'sys'), path.join(root, 'sys'), { recursive: true })
  const text = await readFile(path.join(FIXTURES, fixture, 'expected.json'), 'utf8')
  const expected = JSON.parse(text.replaceAll(`"${FIXTURE_HOST}_`, `"${host}_`)) as ExpectedDevice[]
  return { host, root, expected, remove: () => rm(root, { recursive: true, force: true }) }
}

export const deployablesOf = (devices: readonly ExpectedDevice[]) =>
  devices.flatMap((d) => d.deployables)

/**
 * Polls an agent's outbox (`<state_path>/agent-<host>/outbox.json`, see src/agent/local-cache.ts)
 * until it holds an unacknowledged report: the agent has saved a changed snapshot and is sending
 * it to a conductor. False if none showed within `timeoutMs` (or it came and went between polls).
 */
export async function reportInFlight(agentStateDir: string, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await outboxPending(agentStateDir)) return true
    await new Promise((r) => setTimeout(r, 2))
  }
  return false
}

/** True while the agent's outbox holds a report the conductor has not acknowledged. */
export async function outboxPending(agentStateDir: string): Promise<boolean> {
  const text = await readFile(path.join(agentStateDir, 'outbox.json'), 'utf8').catch(() => '')
  return /"entries":\[\{/.test(text)
}

/** Removes a QAT VF (intel-qat fixtures): the PF's `virtfn<n>` entry and the VF's function; returns its deployable name. */
export async function removeQatVf(
  h: FixtureHost,
  pf: string,
  n: number,
  vf: string,
): Promise<string> {
  const devices = path.join(h.root, 'sys/bus/pci/devices')
  await rm(path.join(devices, pf, `virtfn${n}`), { recursive: true })
  await rm(path.join(devices, vf), { recursive: true })
  const name = `${h.host}_${vf}`
  for (const d of h.expected) d.deployables = d.deployables.filter((x) => x.name !== name)
  return name
}

/**
 * Adds an NVMe controller (nvme-ssd fixtures): a copy of `from` (e.g. `nvme0`) named `name` on the
 * PCI function `address`; the expected inventory gains the copy of `from`'s device.
 */
export async function addNvmeController(
  h: FixtureHost,
  from: string,
  name: string,
  address: string,
): Promise<void> {
  const nvme = path.join(h.root, 'sys/class/nvme')
  await cp(path.join(nvme, from), path.join(nvme, name), { recursive: true })
  const uevent = path.join(nvme, name, 'device/uevent')
  const text = await readFile(uevent, 'utf8')
  const old = /PCI_SLOT_NAME=(\S+)/.exec(text)![1]!
  await writeFile(uevent, text.replace(old, address))
  const device = structuredClone(
    h.expected.find((d) => d.deployables.some((x) => x.name === `${h.host}_${old}`))!,
  )
  const [domain, bus, rest] = address.split(':') as [string, string, string]
  const [dev, fn] = rest.split('.') as [string, string]
  device.controlPath.info = { domain, bus, device: dev, function: fn }
  device.deployables[0]!.name = `${h.host}_${address}`
  h.expected.push(device)
}
