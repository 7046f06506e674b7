/**
 * Reading PCI functions from sysfs through the HostProbe port, for every driver that scans
 * `/sys/bus/pci/devices` (layout: Documentation/ABI/testing/sysfs-bus-pci and
 * Documentation/PCI/sysfs.rst in the Linux kernel tree).
 *
 * HostProbe has no readlink. Symbolic links are therefore read *through*: the parent function of
 * an SR-IOV VF is taken from `<vf>/physfn/uevent` (the PF's `PCI_SLOT_NAME=` line), which works on
 * a real host (the kernel follows the `physfn` link) and in a fixture (a plain `physfn/` directory
 * holding a `uevent` file).
 */
import type { HostProbe } from '../driver.js'
import type { PciAddress } from '../../domain/inventory/inventory.js'
import { AppError, DriverError } from '../../domain/errors.js'

/** Where the kernel lists PCI functions. */
export const PCI_DEVICES_ROOT = '/sys/bus/pci/devices'

/** One PCI function as sysfs describes it. Ids are lower-case hex without `0x`. */
export interface PciFunction {
  /** Canonical `dddd:bb:ss.f`, lower case. */
  address: string
  pci: PciAddress
  /** 4 hex digits, e.g. `10de`. */
  vendorId: string
  /** 4 hex digits, e.g. `20f1`. */
  productId: string
  /** 6 hex digits (class, subclass, prog-if), e.g. `030200`; `''` if unreadable. */
  classCode: string
  /** The PF's canonical address when this function is an SR-IOV VF. */
  physfn?: string
}

const ADDRESS_RE = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i

/**
 * Parses a PCI address (`0000:3b:00.0`, `3b:00.0`, or nvidia-smi's `00000000:3B:00.0`).
 * The domain is kept to 4 digits when its extra leading digits are zero. Returns undefined for
 * anything else, including a slot above 0x1f or a domain above 0xffff.
 */
export function parsePciAddress(text: string): PciAddress | undefined {
  const m = ADDRESS_RE.exec(text.trim())
  if (!m) return undefined
  const domain = parseInt(m[1] ?? '0', 16)
  const bus = parseInt(m[2]!, 16)
  const slot = parseInt(m[3]!, 16)
  if (domain > 0xffff || slot > 0x1f) return undefined
  return {
    domain: domain.toString(16).padStart(4, '0'),
    bus: bus.toString(16).padStart(2, '0'),
    device: slot.toString(16).padStart(2, '0'),
    function: m[4]!,
  }
}

/** `dddd:bb:ss.f`. */
export function formatPciAddress(a: PciAddress): string {
  return `${a.domain}:${a.bus}:${a.device}.${a.function}`
}

/** A sysfs id file (`0x10de\n`) as 4 lower-case hex digits; undefined if it is not one. */
export function parseHexId(text: string): string | undefined {
  const m = /^\s*0x([0-9a-f]{1,4})\s*$/i.exec(text)
  return m ? m[1]!.toLowerCase().padStart(4, '0') : undefined
}

/** A sysfs `class` file (`0x030200\n`) as 6 lower-case hex digits; undefined if it is not one. */
export function parseClassCode(text: string): string | undefined {
  const m = /^\s*0x([0-9a-f]{6})\s*$/i.exec(text)
  return m ? m[1]!.toLowerCase() : undefined
}

/** The canonical address in a `uevent` file's `PCI_SLOT_NAME=` line; undefined if absent or invalid. */
export function parseUeventSlotName(text: string): string | undefined {
  const m = /^PCI_SLOT_NAME=(\S+)\s*$/m.exec(text)
  const pci = m ? parsePciAddress(m[1]!) : undefined
  return pci ? formatPciAddress(pci) : undefined
}

/** Reads a file, or undefined if it cannot be read (missing, a directory, permission). */
export async function readOptional(host: HostProbe, path: string): Promise<string | undefined> {
  try {
    return await host.readFile(path)
  } catch {
    return undefined
  }
}

/** Lists a directory, or `[]` if it cannot be read. */
export async function readDirOptional(host: HostProbe, path: string): Promise<string[]> {
  try {
    return await host.readDir(path)
  } catch {
    return []
  }
}

/**
 * Lists a driver's scan root. A missing root is an empty host (`[]`); a root that exists but
 * cannot be listed is a real failure (DriverError `SYSFS_UNREADABLE`).
 */
export async function readScanRoot(host: HostProbe, root: string): Promise<string[]> {
  try {
    return await host.readDir(root)
  } catch (err) {
    const present = await host.exists(root).catch(() => false)
    if (!present) return []
    throw new DriverError(`cannot list ${root}`, {
      code: 'SYSFS_UNREADABLE',
      details: { path: root },
      cause: err,
    })
  }
}

/** Throws `ABORTED` if the signal fired. */
export function throwIfAborted(driver: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new AppError(`${driver} discovery aborted`, { code: 'ABORTED', cause: signal.reason })
  }
}

/**
 * Reads one function under `root`; undefined if its name is not a PCI address or its `vendor` or
 * `device` file is missing or garbage. An unreadable `class` gives `classCode: ''`.
 */
export async function readPciFunction(
  host: HostProbe,
  entry: string,
  root = PCI_DEVICES_ROOT,
): Promise<PciFunction | undefined> {
  const pci = parsePciAddress(entry)
  if (!pci) return undefined
  const dir = `${root}/${entry}`
  const [vendor, device, cls, physfn] = await Promise.all([
    readOptional(host, `${dir}/vendor`),
    readOptional(host, `${dir}/device`),
    readOptional(host, `${dir}/class`),
    readOptional(host, `${dir}/physfn/uevent`),
  ])
  const vendorId = vendor === undefined ? undefined : parseHexId(vendor)
  const productId = device === undefined ? undefined : parseHexId(device)
  if (vendorId === undefined || productId === undefined) return undefined
  const fn: PciFunction = {
    address: formatPciAddress(pci),
    pci,
    vendorId,
    productId,
    classCode: (cls === undefined ? undefined : parseClassCode(cls)) ?? '',
  }
  const pf = physfn === undefined ? undefined : parseUeventSlotName(physfn)
  if (pf !== undefined && pf !== fn.address) fn.physfn = pf
  return fn
}

/**
 * Every readable PCI function under `root` that passes `filter`, sorted by address. Duplicate
 * addresses (`3b:00.0` next to `0000:3b:00.0`) keep the first entry in sorted order.
 */
export async function listPciFunctions(
  host: HostProbe,
  options: {
    root?: string
    signal?: AbortSignal | undefined
    filter?: (fn: PciFunction) => boolean
  } = {},
): Promise<PciFunction[]> {
  const { root = PCI_DEVICES_ROOT, signal, filter = () => true } = options
  const entries = (await readScanRoot(host, root)).slice().sort()
  const out = new Map<string, PciFunction>()
  for (const entry of entries) {
    throwIfAborted('PCI scan', signal)
    const fn = await readPciFunction(host, entry, root)
    if (fn && !out.has(fn.address) && filter(fn)) out.set(fn.address, fn)
  }
  return [...out.values()].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : 0,
  )
}

/** A PCI attach handle's info for `a`, with extra string fields (e.g. `physical_network`). */
export function pciHandleInfo(
  a: PciAddress,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { domain: a.domain, bus: a.bus, device: a.device, function: a.function, ...extra }
}

const VIRTFN_RE = /^virtfn(\d+)$/

/** The VF addresses named by `virtfn<N>/uevent` files, in `N` order; garbage entries are skipped. */
export function parseVirtfnSlots(
  entries: readonly { name: string; uevent: string | undefined }[],
): string[] {
  return entries
    .map((e) => ({
      n: VIRTFN_RE.exec(e.name)?.[1],
      slot: e.uevent === undefined ? undefined : parseUeventSlotName(e.uevent),
    }))
    .filter((e): e is { n: string; slot: string } => e.n !== undefined && e.slot !== undefined)
    .sort((a, b) => Number(a.n) - Number(b.n))
    .map((e) => e.slot)
}

/** VF addresses named by `<pf>/virtfn<N>/uevent`, in `N` order. */
export async function readVirtfns(host: HostProbe, dir: string): Promise<string[]> {
  const names = (await readDirOptional(host, dir)).filter((n) => VIRTFN_RE.test(n))
  const entries = await Promise.all(
    names.map(async (name) => ({
      name,
      uevent: await readOptional(host, `${dir}/${name}/uevent`),
    })),
  )
  return parseVirtfnSlots(entries)
}

/**
 * Hands SR-IOV VFs out to PFs so that each VF is reported once. The returned function gives a PF
 * (canonical address) the VFs its `virtfn` links name (`readVirtfns`), then the functions of `all`
 * whose `physfn` is that PF, each once; a VF that is one of `pfs` or that an earlier call handed out
 * is skipped. Call it in the order PFs should win (address order).
 */
export function createVfClaimer(
  all: readonly PciFunction[],
  pfs: ReadonlySet<string>,
): (pf: string, virtfn: readonly string[]) => string[] {
  const claimed = new Set<string>()
  return (pf, virtfn) => {
    const children = all.filter((f) => f.physfn === pf).map((f) => f.address)
    return [...new Set([...virtfn, ...children])].filter((vf) => {
      if (pfs.has(vf) || claimed.has(vf)) return false
      claimed.add(vf)
      return true
    })
  }
}
