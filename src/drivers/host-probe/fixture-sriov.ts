/**
 * SR-IOV for fixture hosts (fixture-host-probe.ts): writing a count into `<pf>/sriov_numvfs` of a
 * PF whose fixture has `sriov_totalvfs` does what the kernel does (Linux
 * Documentation/ABI/testing/sysfs-bus-pci, drivers/pci/iov.c), so that a discovery after a
 * configure sees the new VFs:
 *
 * - `N` > `sriov_totalvfs` fails with ERANGE, anything but a decimal count with EINVAL, `N` while
 *   another non-zero count is set with EBUSY; the count already set changes nothing;
 * - otherwise the PF's VFs are replaced: its recorded `virtfn*` entries and VF directories (the
 *   `virtfn*` targets, and top-level functions whose `physfn` names it) disappear, and `N` VFs
 *   appear, laid out as recorded fixtures are (symlinks read through, as directories):
 *   `<pf>/virtfn<i>/uevent` and the VF's directory `/sys/bus/pci/devices/<vf>/` with `vendor`,
 *   `device`, `class`, `uevent` and `physfn/uevent`;
 * - VF `i` sits at the PF's routing id + `sriov_offset` + `i` × `sriov_stride` (both read from the
 *   fixture; default offset 128 and stride 1), so bus, slot and function follow the PCIe rule; its
 *   device id is `sriov_vf_device` (else the PF's), its vendor and class the PF's;
 * - writes under a simulated VF (a `reset`, a `driver_override`) are kept with it and go with it.
 *
 * A fixture PF without `sriov_totalvfs`, and every other path, is left to the plain probe.
 */
import path from 'node:path'
import type { HostProbe } from '../driver.js'
import { DriverError } from '../../domain/errors.js'
import {
  formatPciAddress,
  parsePciAddress,
  parseUeventSlotName,
  PCI_DEVICES_ROOT,
} from '../pci/pci-sysfs.js'

/** The reads the simulation sits on: the recorded fixture (with the plain writes). */
export type FixtureTree = Pick<HostProbe, 'readFile' | 'readDir' | 'exists'>

/** The fixture tree with SR-IOV simulated over it. */
export interface SriovTree extends FixtureTree {
  /**
   * Applies a write the simulation owns (a PF's `sriov_numvfs`, a file under a simulated VF);
   * false for any other write, which the caller keeps as a plain write.
   * @throws DriverError HOST_IO_ERROR (ERANGE, EINVAL, EBUSY; ENOENT under a VF that went) where
   *   the kernel refuses
   */
  write(hostPath: string, data: string): Promise<boolean>
}

/** One PF's SR-IOV state, read from the fixture at its first `sriov_numvfs` write. */
interface PfState {
  total: number
  numvfs: number
  offset: number
  stride: number
  vendor: string
  vfDevice: string
  classCode: string
  /** The recorded `virtfn*` entries and VF directories, hidden once the count changes. */
  recorded: string[]
  /** Canonical VF addresses simulated now. */
  vfs: string[]
}

const NUMVFS = /^\/sys\/bus\/pci\/devices\/([^/]+)\/sriov_numvfs$/
const VIRTFN = /^virtfn\d+$/

const norm = (p: string): string => path.posix.normalize(p).replace(/(.)\/$/, '$1')

const ioError = (hostPath: string, errno: string): DriverError =>
  new DriverError(`cannot write ${hostPath}: ${errno}`, {
    code: 'HOST_IO_ERROR',
    details: { path: hostPath },
  })

const notFound = (verb: string, hostPath: string): DriverError =>
  new DriverError(`cannot ${verb} ${hostPath}: ENOENT`, {
    code: 'HOST_PATH_NOT_FOUND',
    details: { path: hostPath },
  })

/** A sysfs count or hex id, trimmed; undefined if unreadable. */
const readText = (base: FixtureTree, p: string): Promise<string | undefined> =>
  base.readFile(p).then(
    (t) => t.trim(),
    () => undefined,
  )

/** Address of VF `i` of `pf` (canonical); undefined past the PCI address space. */
export function vfAddress(
  pf: string,
  offset: number,
  stride: number,
  i: number,
): string | undefined {
  const a = parsePciAddress(pf)
  if (!a) return undefined
  const rid =
    parseInt(a.bus, 16) * 256 +
    parseInt(a.device, 16) * 8 +
    Number(a.function) +
    offset +
    i * stride
  if (rid > 0xffff) return undefined
  const bus = (rid >> 8).toString(16).padStart(2, '0')
  const slot = ((rid >> 3) & 0x1f).toString(16).padStart(2, '0')
  return formatPciAddress({ domain: a.domain, bus, device: slot, function: String(rid & 7) })
}

/** Wraps `base` with the SR-IOV simulation. */
export function createSriovTree(base: FixtureTree): SriovTree {
  /** Simulated files: normalized host path → content. */
  const files = new Map<string, string>()
  /** Recorded paths (and everything below them) that no longer exist. */
  const hidden = new Set<string>()
  const pfs = new Map<string, PfState | undefined>()

  const isHidden = (p: string): boolean => {
    for (let at = p; ; at = path.posix.dirname(at)) {
      if (hidden.has(at)) return true
      if (path.posix.dirname(at) === at) return false
    }
  }
  const children = (dir: string): string[] => {
    const prefix = dir === '/' ? '/' : `${dir}/`
    const out = new Set<string>()
    for (const key of files.keys())
      if (key.startsWith(prefix)) out.add(key.slice(prefix.length).split('/')[0]!)
    return [...out]
  }
  const dropUnder = (dir: string) => {
    for (const key of [...files.keys()]) if (key.startsWith(`${dir}/`)) files.delete(key)
  }
  const vfDirOf = (p: string): string | undefined => {
    for (const state of pfs.values())
      for (const vf of state?.vfs ?? []) {
        const dir = `${PCI_DEVICES_ROOT}/${vf}`
        if (p.startsWith(`${dir}/`)) return dir
      }
    return undefined
  }

  /** Reads a PF's state from the fixture; undefined when it is not simulated. */
  const load = async (pf: string): Promise<PfState | undefined> => {
    const dir = `${PCI_DEVICES_ROOT}/${pf}`
    const names = ['sriov_totalvfs', 'sriov_numvfs', 'sriov_offset', 'sriov_stride']
    const [total, numvfs, offset, stride, vendor, device, vfDevice, cls] = await Promise.all(
      [...names, 'vendor', 'device', 'sriov_vf_device', 'class'].map((f) =>
        readText(base, `${dir}/${f}`),
      ),
    )
    if (total === undefined || !/^\d+$/.test(total)) return undefined
    const links = (await base.readDir(dir).catch(() => [])).filter((n) => VIRTFN.test(n))
    const targets = await Promise.all(
      links.map(async (n) =>
        parseUeventSlotName((await readText(base, `${dir}/${n}/uevent`)) ?? ''),
      ),
    )
    const recorded = links.map((n) => `${dir}/${n}`)
    for (const entry of await base.readDir(PCI_DEVICES_ROOT).catch(() => [])) {
      const physfn = await readText(base, `${PCI_DEVICES_ROOT}/${entry}/physfn/uevent`)
      const owner = physfn === undefined ? undefined : parseUeventSlotName(physfn)
      if (owner === pf || targets.includes(entry)) recorded.push(`${PCI_DEVICES_ROOT}/${entry}`)
    }
    const count = (text: string | undefined, fallback: number) =>
      text !== undefined && /^\d+$/.test(text) ? Number(text) : fallback
    return {
      total: Number(total),
      numvfs: count(numvfs, links.length),
      offset: count(offset, 128),
      stride: count(stride, 1),
      vendor: vendor ?? '0x0000',
      vfDevice: vfDevice === undefined ? (device ?? '0x0000') : `0x${vfDevice.replace(/^0x/i, '')}`,
      classCode: cls ?? '0x000000',
      recorded,
      vfs: [],
    }
  }

  /** Replaces the PF's simulated VFs with `n` new ones. */
  const lay = (pf: string, state: PfState, n: number) => {
    const dir = `${PCI_DEVICES_ROOT}/${pf}`
    for (const gone of state.recorded) hidden.add(gone)
    for (const vf of state.vfs) dropUnder(`${PCI_DEVICES_ROOT}/${vf}`)
    for (const name of children(dir)) if (VIRTFN.test(name)) dropUnder(`${dir}/${name}`)
    state.vfs = []
    for (let i = 0; i < n; i++) {
      const vf = vfAddress(pf, state.offset, state.stride, i)
      if (vf === undefined) break
      const vfDir = `${PCI_DEVICES_ROOT}/${vf}`
      const id = state.vfDevice.replace(/^0x/i, '').toUpperCase()
      const uevent = `PCI_ID=${state.vendor.replace(/^0x/i, '').toUpperCase()}:${id}\nPCI_SLOT_NAME=${vf}\n`
      files.set(`${dir}/virtfn${i}/uevent`, uevent)
      files.set(`${vfDir}/vendor`, `${state.vendor}\n`)
      files.set(`${vfDir}/device`, `${state.vfDevice}\n`)
      files.set(`${vfDir}/class`, `${state.classCode}\n`)
      files.set(`${vfDir}/uevent`, uevent)
      files.set(`${vfDir}/physfn/uevent`, `PCI_SLOT_NAME=${pf}\n`)
      state.vfs.push(vf)
    }
    state.numvfs = n
    files.set(`${dir}/sriov_numvfs`, `${n}\n`)
  }

  return {
    async readFile(hostPath) {
      const p = norm(hostPath)
      const content = files.get(p)
      if (content !== undefined) return content
      if (isHidden(p)) throw notFound('read', hostPath)
      return base.readFile(hostPath)
    },
    async readDir(hostPath) {
      const p = norm(hostPath)
      const simulated = children(p)
      const recorded = isHidden(p)
        ? undefined
        : await base.readDir(hostPath).catch((err: unknown) => {
            if (simulated.length === 0) throw err
            return undefined
          })
      if (recorded === undefined && simulated.length === 0) throw notFound('list', hostPath)
      const kept = (recorded ?? []).filter((e) => !isHidden(`${p}/${e}`))
      return [...new Set([...kept, ...simulated])].sort()
    },
    async exists(hostPath) {
      const p = norm(hostPath)
      if (files.has(p) || children(p).length > 0) return true
      return !isHidden(p) && base.exists(hostPath)
    },
    async write(hostPath, data) {
      const p = norm(hostPath)
      if (vfDirOf(p) !== undefined) {
        files.set(p, data)
        return true
      }
      if (isHidden(p)) throw ioError(hostPath, 'ENOENT')
      const pf = NUMVFS.exec(p)?.[1]
      const canonical = pf === undefined ? undefined : parsePciAddress(pf)
      if (canonical === undefined || formatPciAddress(canonical) !== pf) return false
      if (!pfs.has(pf)) pfs.set(pf, await load(pf))
      const state = pfs.get(pf)
      if (state === undefined) return false
      const n = /^\s*\d{1,5}\s*$/.test(data) ? Number(data) : NaN
      if (!Number.isInteger(n)) throw ioError(hostPath, 'EINVAL')
      if (n > state.total) throw ioError(hostPath, 'ERANGE')
      if (n === state.numvfs) return true
      if (n !== 0 && state.numvfs !== 0) throw ioError(hostPath, 'EBUSY')
      lay(pf, state, n)
      return true
    },
  }
}
