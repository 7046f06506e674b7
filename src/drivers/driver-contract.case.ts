/**
 * The shared driver contract (hono's `common.case.test.ts` pattern): every driver in the registry
 * runs over every fixture case in `__fixtures__/<driver>/<case>/` plus an empty host, and must
 *
 * - not throw;
 * - report unique deployable names and unique control paths;
 * - give deep-equal results on two runs (stable ids);
 * - report only devices of its own `deviceType`;
 * - emit a resource class (`rc`) and traits (`trait<N>`) that Placement accepts;
 * - match the case's `expected.json` when there is one;
 * - on the empty host, if it has a `clean` step: clean a unit without throwing anything but a
 *   DriverError with a clean code (CLEAN_UNSUPPORTED, …), and without writing to the host.
 *
 * Every directory under `__fixtures__/<driver>/` is a case and must hold a `SOURCE` note; it may
 * hold `options.json` (the driver options, a JSON object of strings). The fixture tree
 * is read through the node HostProbe, so this file needs no node:fs.
 */
import path from 'node:path'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { DriverFactory, HostProbe } from './driver.js'
import { DRIVERS } from './index.js'
import { createFixtureHostProbe } from './host-probe/fixture-host-probe.js'
import { createNodeHostProbe } from './host-probe/node-host-probe.js'
import { isValidTrait } from './traits.js'
import { AttachType, canonicalJson, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import { CleanErrorCode, runClean, type CleanTarget } from './clean.js'
import { DriverError } from '../domain/errors.js'

/** A unit on no host: a PCI function handle and control path. */
const CONTRACT_TARGET: CleanTarget = {
  controlPath: { type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: '0' } },
  handle: {
    type: AttachType.PCI,
    info: { domain: '0000', bus: '3b', device: '00', function: '0' },
  },
}
const CLEAN_CODES: readonly string[] = Object.values(CleanErrorCode)

/** Options of {@link runDriverContract}. */
export interface DriverContractOptions {
  /** Drivers to check, by name. @default DRIVERS (the registry) */
  drivers?: Readonly<Record<string, DriverFactory>>
  /** Where `<driver>/<case>/` fixture dirs live. @default src/drivers/__fixtures__ */
  fixturesRoot?: string
  /** Host name passed to the drivers (and used in expected.json). @default 'compute-1' */
  hostname?: string
}

/** The host name every expected.json is written for. */
export const CONTRACT_HOSTNAME = 'compute-1'

/** One case: a fixture dir, or the empty host (a dir that does not exist). */
interface ContractCase {
  name: string
  dir: string
  options: Record<string, string>
  expected?: DiscoveredDevice[]
  /** Every fixture dir must say where its layout comes from. */
  hasSource: boolean
}

async function loadCases(fs: HostProbe, root: string, driver: string): Promise<ContractCase[]> {
  const cases: ContractCase[] = [
    {
      name: '(empty host)',
      dir: path.join(root, driver, '.no-such-host'),
      options: {},
      hasSource: true,
    },
  ]
  const base = path.join(root, driver)
  if (!(await fs.exists(base))) return cases
  for (const name of (await fs.readDir(base)).sort()) {
    const dir = path.join(base, name)
    const isDir = await fs.readDir(dir).then(
      () => true,
      () => false,
    )
    if (!isDir) continue
    const c: ContractCase = {
      name,
      dir,
      options: {},
      hasSource: await fs.exists(path.join(dir, 'SOURCE')),
    }
    const json = async (file: string): Promise<unknown> =>
      (await fs.exists(path.join(dir, file)))
        ? JSON.parse(await fs.readFile(path.join(dir, file)))
        : undefined
    c.options = ((await json('options.json')) ?? {}) as Record<string, string>
    const expected = (await json('expected.json')) as DiscoveredDevice[] | undefined
    if (expected !== undefined) c.expected = expected
    cases.push(c)
  }
  return cases
}

/** Checks the invariants that do not depend on the case. */
export function assertDeviceInvariants(
  deviceType: string,
  devices: readonly DiscoveredDevice[],
): void {
  assert.equal(Array.isArray(devices), true, 'discover() must return an array')
  const names = new Set<string>()
  const controlPaths = new Set<string>()
  for (const device of devices) {
    assert.equal(
      device.type,
      deviceType,
      `device type ${device.type} ≠ driver deviceType ${deviceType}`,
    )
    const cp = canonicalJson(device.controlPath)
    assert.ok(!controlPaths.has(cp), `duplicate control path ${cp}`)
    controlPaths.add(cp)
    for (const dep of device.deployables) {
      assert.ok(!names.has(dep.name), `duplicate deployable name ${dep.name}`)
      names.add(dep.name)
      assert.ok(
        Number.isInteger(dep.numAccelerators) && dep.numAccelerators > 0,
        `${dep.name}: numAccelerators ${dep.numAccelerators}`,
      )
      const rc = dep.attributes.filter((a) => a.key === 'rc')
      assert.equal(rc.length, 1, `${dep.name}: exactly one rc attribute`)
      assert.ok(isValidTrait(rc[0]!.value), `${dep.name}: invalid resource class ${rc[0]!.value}`)
      for (const a of dep.attributes.filter((x) => x.key.startsWith('trait'))) {
        assert.match(a.key, /^trait\d+$/, `${dep.name}: attribute key ${a.key}`)
        assert.ok(isValidTrait(a.value), `${dep.name}: invalid trait ${a.value}`)
      }
    }
  }
}

/** Registers the contract tests (call at the top level of a test file). */
export function runDriverContract(options: DriverContractOptions = {}): void {
  const {
    fixturesRoot = path.join(import.meta.dirname, '__fixtures__'),
    hostname = CONTRACT_HOSTNAME,
  } = options
  const drivers: Readonly<Record<string, DriverFactory>> = options.drivers ?? DRIVERS
  const fs = createNodeHostProbe()
  for (const [name, factory] of Object.entries(drivers)) {
    void describe(`driver contract: ${name}`, async () => {
      const cases = await loadCases(fs, fixturesRoot, name)
      for (const c of cases) {
        void it(`${c.name}: discovers without throwing, stably, with valid ids and traits`, async () => {
          assert.ok(
            c.hasSource,
            `${c.dir} needs a SOURCE note (host, and the documentation its layout follows)`,
          )
          const driver = factory({ host: createFixtureHostProbe(c.dir), hostname }, c.options)
          const first = await driver.discover()
          const second = await driver.discover()
          assertDeviceInvariants(driver.deviceType, first)
          assert.deepEqual(second, first, 'two runs over the same host must give the same result')
          if (c.expected !== undefined) assert.deepEqual(first, c.expected)
        })
      }
      const empty = cases[0]!
      const probe = createFixtureHostProbe(empty.dir)
      const driver = factory({ host: probe, hostname }, {})
      if (driver.clean !== undefined) {
        void it('(empty host): clean refuses with a clean code, writing nothing', async () => {
          try {
            const report = await runClean(driver, CONTRACT_TARGET, { timeoutMs: 5000 })
            assert.equal(typeof report.method, 'string')
            assert.equal(typeof report.evidence, 'string')
          } catch (err) {
            assert.ok(err instanceof DriverError, `clean threw ${String(err)}`)
            assert.ok(CLEAN_CODES.includes(err.code), `clean threw code ${err.code}`)
          }
          assert.deepEqual(probe.writes, [])
        })
      }
    })
  }
}

/**
 * An in-memory HostProbe over `files` (absolute path → content) and `commands` (command line →
 * stdout), for property tests: directories are implied by the file paths. Unknown commands fail
 * like missing ones.
 */
export function createMemoryHostProbe(
  files: Readonly<Record<string, string>>,
  commands: Readonly<Record<string, string>> = {},
): HostProbe {
  const dirs = new Map<string, Set<string>>()
  for (const file of Object.keys(files)) {
    const parts = file.split('/').filter((p) => p !== '')
    for (let i = 0; i < parts.length; i++) {
      const dir = '/' + parts.slice(0, i).join('/')
      const set = dirs.get(dir) ?? new Set<string>()
      set.add(parts[i]!)
      dirs.set(dir, set)
    }
  }
  const norm = (p: string): string => path.posix.normalize(p).replace(/\/$/, '') || '/'
  return {
    readFile(p) {
      const content = files[norm(p)]
      return content === undefined
        ? Promise.reject(new Error(`ENOENT: ${p}`))
        : Promise.resolve(content)
    },
    readDir(p) {
      const set = dirs.get(norm(p))
      return set === undefined
        ? Promise.reject(new Error(`ENOENT: ${p}`))
        : Promise.resolve([...set].sort())
    },
    exists(p) {
      return Promise.resolve(files[norm(p)] !== undefined || dirs.has(norm(p)))
    },
    exec(command, args) {
      const out = commands[[command, ...args].join(' ')]
      return out === undefined
        ? Promise.reject(new Error(`command not found: ${command}`))
        : Promise.resolve(out)
    },
    writeFile() {
      return Promise.reject(new Error('read-only memory host'))
    },
  }
}
