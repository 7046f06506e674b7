/**
 * The generic PCI driver: offers whitelisted PCI functions as `CUSTOM_PCI` resources.
 *
 * It scans `/sys/bus/pci/devices/*` (kernel Documentation/ABI/testing/sysfs-bus-pci: `vendor`,
 * `device`, `class`, and `physfn` for SR-IOV VFs) and keeps the functions matched by the
 * `device_spec` option, written in Nova's `[pci] device_spec` syntax (Nova admin guide "Attaching
 * physical PCI devices to guests"). No `device_spec`, no devices.
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import {
  AttachType,
  controlPathAddress,
  DeviceType,
  type DiscoveredDevice,
} from '../../domain/inventory/inventory.js'
import { ConfigError } from '../../domain/errors.js'
import { listPciFunctions, pciHandleInfo, throwIfAborted, type PciFunction } from './pci-sysfs.js'
import { pciHealthThresholds, withPciHealth, type PciHealthOptions } from './pci-health.js'
import { OWNER_CYBORG, rcAndTraits, traitSegment, vendorTraitName } from '../traits.js'
import { cleanSettings, FLR_CLEAN_TIMEOUT_S, type CleanOptions } from '../clean.js'
import { flrCleanSteps } from './pci-clean.js'

/** The resource class of every generic PCI deployable. */
export const PCI_RESOURCE_CLASS = 'CUSTOM_PCI'

/** One address field matcher: any value, one number, or a regular expression over the padded hex. */
type FieldMatcher =
  { kind: 'any' } | { kind: 'value'; value: number } | { kind: 'regex'; re: RegExp }

/** One parsed `device_spec` entry. */
export interface DeviceSpec {
  vendorId: FieldMatcher
  productId: FieldMatcher
  domain: FieldMatcher
  bus: FieldMatcher
  slot: FieldMatcher
  function: FieldMatcher
  /** Copied into the PCI attach handle as `physical_network`. */
  physicalNetwork?: string
}

const ANY: FieldMatcher = { kind: 'any' }

const specError = (message: string, spec: unknown): ConfigError =>
  new ConfigError(`pci driver option device_spec: ${message}`, {
    code: 'INVALID_DEVICE_SPEC',
    details: { field: 'device_spec', spec },
  })

/** `*`, empty (any) or hex ≤ max. */
function hexField(raw: string, max: number, what: string, spec: unknown): FieldMatcher {
  const text = raw.trim().toLowerCase()
  if (text === '' || text === '*') return ANY
  if (!/^[0-9a-f]+$/.test(text)) throw specError(`${what} "${raw}" is not hex or *`, spec)
  const value = parseInt(text, 16)
  if (value > max) throw specError(`${what} "${raw}" is above 0x${max.toString(16)}`, spec)
  return { kind: 'value', value }
}

/**
 * Parses Nova's address glob `[[[[<domain>]:]<bus>]:][<slot>][.[<function>]]`: each part is hex
 * or `*`, and a missing or empty part matches anything.
 */
function parseAddressGlob(
  glob: string,
  spec: unknown,
): Pick<DeviceSpec, 'domain' | 'bus' | 'slot' | 'function'> {
  const dot = glob.lastIndexOf('.')
  const left = dot < 0 ? glob : glob.slice(0, dot)
  const fn = dot < 0 ? '' : glob.slice(dot + 1)
  const parts = left.split(':')
  if (parts.length > 3) throw specError(`address "${glob}" has too many ':'`, spec)
  const [slot = '', bus = '', domain = ''] = parts.reverse()
  return {
    domain: hexField(domain, 0xffff, 'domain', spec),
    bus: hexField(bus, 0xff, 'bus', spec),
    slot: hexField(slot, 0x1f, 'slot', spec),
    function: hexField(fn, 7, 'function', spec),
  }
}

function regexField(raw: unknown, what: string, spec: unknown): FieldMatcher {
  if (raw === undefined) return ANY
  if (typeof raw !== 'string') throw specError(`address.${what} must be a string`, spec)
  try {
    return { kind: 'regex', re: new RegExp(`^(?:${raw})$`, 'i') }
  } catch {
    throw specError(`address.${what} "${raw}" is not a valid regular expression`, spec)
  }
}

const SPEC_KEYS = new Set([
  'vendor_id',
  'product_id',
  'address',
  'physical_network',
  'trusted',
  'remote_managed',
  'resource_class',
  'traits',
  'managed',
  'live_migratable',
])

function parseOneSpec(entry: unknown): DeviceSpec {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw specError('each entry must be a JSON object', entry)
  }
  const e = entry as Record<string, unknown>
  if (e.devname !== undefined) throw specError('"devname" is not supported; use "address"', entry)
  // Nova treats other keys as tags; a misspelt "vendor" would then silently widen the match to every
  // device, so only the matching keys and the tags Nova documents are accepted.
  for (const key of Object.keys(e)) {
    if (!SPEC_KEYS.has(key))
      throw specError(`unknown key "${key}"; expected ${[...SPEC_KEYS].join(', ')}`, entry)
  }
  const str = (key: string): string | undefined => {
    const v = e[key]
    if (v === undefined) return undefined
    if (typeof v !== 'string') throw specError(`"${key}" must be a string`, entry)
    return v
  }
  const vendor = str('vendor_id')
  const product = str('product_id')
  const physicalNetwork = str('physical_network')
  let address: Pick<DeviceSpec, 'domain' | 'bus' | 'slot' | 'function'> = {
    domain: ANY,
    bus: ANY,
    slot: ANY,
    function: ANY,
  }
  if (typeof e.address === 'string') address = parseAddressGlob(e.address, entry)
  else if (e.address !== undefined) {
    if (e.address === null || typeof e.address !== 'object' || Array.isArray(e.address)) {
      throw specError('"address" must be a glob string or an object of regular expressions', entry)
    }
    const a = e.address as Record<string, unknown>
    address = {
      domain: regexField(a.domain, 'domain', entry),
      bus: regexField(a.bus, 'bus', entry),
      slot: regexField(a.slot, 'slot', entry),
      function: regexField(a.function, 'function', entry),
    }
  }
  return {
    vendorId:
      vendor === undefined ? ANY : hexField(vendor.replace(/^0x/i, ''), 0xffff, 'vendor_id', entry),
    productId:
      product === undefined
        ? ANY
        : hexField(product.replace(/^0x/i, ''), 0xffff, 'product_id', entry),
    ...address,
    ...(physicalNetwork === undefined ? {} : { physicalNetwork }),
  }
}

/**
 * Parses the `device_spec` option: a JSON object or a JSON list of objects in Nova's syntax.
 * Empty text means no whitelist (`[]`).
 * @throws ConfigError `INVALID_DEVICE_SPEC` for invalid JSON or an invalid entry
 */
export function parseDeviceSpec(text: string | undefined): DeviceSpec[] {
  if (text === undefined || text.trim() === '') return []
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new ConfigError(
      `pci driver option device_spec: not valid JSON: ${(err as Error).message}`,
      {
        code: 'INVALID_DEVICE_SPEC',
        details: { field: 'device_spec' },
        cause: err,
      },
    )
  }
  return (Array.isArray(json) ? json : [json]).map(parseOneSpec)
}

function fieldMatches(m: FieldMatcher, hex: string): boolean {
  switch (m.kind) {
    case 'any':
      return true
    case 'value':
      return parseInt(hex, 16) === m.value
    case 'regex':
      return m.re.test(hex)
  }
}

/** True if `spec` matches `fn` (every given field matches). */
export function specMatches(
  spec: DeviceSpec,
  fn: Pick<PciFunction, 'pci' | 'vendorId' | 'productId'>,
): boolean {
  return (
    fieldMatches(spec.vendorId, fn.vendorId) &&
    fieldMatches(spec.productId, fn.productId) &&
    fieldMatches(spec.domain, fn.pci.domain) &&
    fieldMatches(spec.bus, fn.pci.bus) &&
    fieldMatches(spec.slot, fn.pci.device) &&
    fieldMatches(spec.function, fn.pci.function)
  )
}

/** The traits of a generic PCI function, in attribute order. */
export function pciTraits(vendorId: string, productId: string): string[] {
  return [
    OWNER_CYBORG,
    `CUSTOM_PCI_${vendorTraitName(vendorId)}`,
    `CUSTOM_PCI_PRODUCT_ID_${traitSegment(productId)}`,
  ]
}

/**
 * Builds the devices for the matched functions (pure). The first matching spec entry wins.
 * A PF whose VFs are matched too is left out: it offers its VFs, not itself and them.
 */
export function buildPciDevices(
  hostname: string,
  functions: readonly PciFunction[],
  specs: readonly DeviceSpec[],
): DiscoveredDevice[] {
  const matched: { fn: PciFunction; spec: DeviceSpec }[] = []
  for (const fn of functions) {
    const spec = specs.find((s) => specMatches(s, fn))
    if (spec) matched.push({ fn, spec })
  }
  const parentsOfMatchedVfs = new Set(
    matched.flatMap(({ fn }) => (fn.physfn === undefined ? [] : [fn.physfn])),
  )
  return matched
    .filter(({ fn }) => !parentsOfMatchedVfs.has(fn.address))
    .map(({ fn, spec }) => ({
      type: DeviceType.PCI,
      vendor: fn.vendorId,
      model: fn.productId,
      stdBoardInfo: {
        vendor_id: fn.vendorId,
        product_id: fn.productId,
        class: fn.classCode,
        ...(fn.physfn === undefined ? {} : { physfn: fn.physfn }),
      },
      vendorBoardInfo: null,
      controlPath: { type: 'PCI' as const, info: { ...fn.pci } },
      deployables: [
        {
          name: `${hostname}_${fn.address}`,
          numAccelerators: 1,
          driverName: 'pci',
          attributes: rcAndTraits(PCI_RESOURCE_CLASS, pciTraits(fn.vendorId, fn.productId)),
          attachHandles: [
            {
              type: AttachType.PCI,
              info: pciHandleInfo(
                fn.pci,
                spec.physicalNetwork === undefined
                  ? {}
                  : { physical_network: spec.physicalNetwork },
              ),
            },
          ],
        },
      ],
    }))
}

/**
 * Options of the generic PCI driver (all strings, from `[pci_driver]`-style config), with the
 * PCIe health thresholds of {@link PciHealthOptions} (`aer_fatal_failed`, `aer_nonfatal_degraded`,
 * `aer_correctable_degraded`, `link_check`), read for a VF from its PF (the physical link), and
 * `clean` / `clean_timeout` (a function-level reset of the handle's function, docs/cleaning.md).
 */
export interface PciDriverOptions extends PciHealthOptions, CleanOptions {
  /** Nova `device_spec` JSON (object or list). @default '' (no devices) */
  device_spec?: string
  /** The sysfs directory to scan. @default '/sys/bus/pci/devices' */
  sysfs_root?: string
}

/**
 * Creates the generic PCI driver.
 * @throws ConfigError if `device_spec` or a health option is invalid (at creation, so a typo fails
 * the agent's start)
 */
export function createPciDriver(
  deps: DriverDeps,
  options: PciDriverOptions = {},
): AcceleratorDriver {
  const { device_spec: deviceSpec = '', sysfs_root: root = '/sys/bus/pci/devices' } = options
  const specs = parseDeviceSpec(deviceSpec)
  const thresholds = pciHealthThresholds('pci', options)
  const settings = cleanSettings('pci', options, FLR_CLEAN_TIMEOUT_S)
  return {
    name: 'pci',
    deviceType: DeviceType.PCI,
    cleanSettings: settings,
    ...flrCleanSteps(deps.host, 'pci', root),
    async discover({ signal } = {}) {
      throwIfAborted('pci', signal)
      if (specs.length === 0) return []
      const functions = await listPciFunctions(deps.host, { root, signal })
      const devices = buildPciDevices(deps.hostname, functions, specs)
      throwIfAborted('pci', signal)
      // A VF has no link of its own: its PF's AER counters and link are what it runs on.
      const pfOf = new Map(functions.map((f) => [f.address, f.physfn ?? f.address]))
      return withPciHealth(deps.host, devices, thresholds, {
        root,
        functionOf: (d) => pfOf.get(controlPathAddress(d.controlPath)),
      })
    },
  }
}
