/**
 * The NVIDIA GPU driver: physical GPUs (PGPU), their vGPU types (VGPU, mediated devices) and
 * SR-IOV virtual functions, with model names from `lspci -nnD` and MIG state from `nvidia-smi -q -x`.
 *
 * Formats:
 * - sysfs PCI functions: Linux Documentation/ABI/testing/sysfs-bus-pci (vendor 0x10de, class 0x03xxxx);
 * - mediated device types: Linux Documentation/driver-api/vfio-mediated-device.rst
 *   (`mdev_supported_types/<type>/{name,available_instances,devices/}`);
 * - `lspci -nnD`: pciutils lspci(8) (`<dddd:bb:ss.f> <class> [cccc]: <name> [vvvv:dddd] (rev rr)`);
 * - `nvidia-smi -q -x`: the nvsmi_device_v*.dtd XML shipped with the NVIDIA driver
 *   (`<gpu id=…>`, `<product_name>`, `<mig_mode><current_mig>`, `<mig_devices><mig_device>`),
 *   read in nvidia-smi.ts; health (ECC, retired pages, row remapping, lost GPUs, PCIe) in
 *   nvidia-health.ts.
 *
 * Configure: an operator may pick one pGPU's vGPU type (nvidia-vgpu-config.ts, option
 * `vgpu_type_by_address`); that pGPU then offers that type only.
 */
import type { AcceleratorDriver, DriverDeps, HostProbe } from '../driver.js'
import {
  AttachType,
  controlPathAddress,
  DeviceType,
  type DiscoveredDeployable,
  type DiscoveredDevice,
  type PciAddress,
} from '../../domain/inventory/inventory.js'
import {
  formatPciAddress,
  listPciFunctions,
  parsePciAddress,
  pciHandleInfo,
  throwIfAborted,
  type PciFunction,
} from '../pci/pci-sysfs.js'
import { OWNER_CYBORG, rcAndTraits, traitSegment } from '../traits.js'
import { parseNvidiaSmiXml, type NvidiaSmiGpu } from './nvidia-smi.js'
import { createNvidiaSampler } from './nvidia-telemetry.js'
import type { DeviceStatsCapability } from '../../domain/device-telemetry.js'
import { pciHealthThresholds, type PciHealthOptions } from '../pci/pci-health.js'
import { cleanSettings, type CleanOptions } from '../clean.js'
import { createNvidiaCleanSteps, NVIDIA_CLEAN_TIMEOUT_S } from './nvidia-clean.js'
import {
  NVIDIA_PCI_HEALTH,
  nvidiaHealthThresholds,
  withNvidiaHealth,
  type NvidiaHealthOptions,
} from './nvidia-health.js'

import { readMdevTypes, type MdevType } from './mdev-types.js'
import { parseVgpuTypeByAddress, createVgpuConfigure } from './nvidia-vgpu-config.js'

export { parseNvidiaSmiXml, type NvidiaSmiGpu, type NvidiaSmiMigDevice } from './nvidia-smi.js'
export { parseCount, type MdevType } from './mdev-types.js'

/** NVIDIA's PCI vendor id. */
export const NVIDIA_VENDOR_ID = '10de'

/** One line of `lspci -nnD`. */
export interface LspciEntry {
  address: string
  className: string
  /** 4 hex digits: class and subclass. */
  classCode: string
  /** Vendor and device names as lspci prints them (`NVIDIA Corporation GA100 [A100 PCIe 40GB]`). */
  description: string
  vendorId: string
  productId: string
}

const LSPCI_LINE =
  /^(\S+)\s+(.+?)\s+\[([0-9a-f]{4})\]:\s+(.+)\s+\[([0-9a-f]{4}):([0-9a-f]{4})\](?:\s.*)?$/i

/** Parses `lspci -nnD` output; lines that are not one device each are skipped. */
export function parseLspciNnD(text: string): LspciEntry[] {
  const out: LspciEntry[] = []
  for (const line of text.split('\n')) {
    const m = LSPCI_LINE.exec(line.trim())
    if (!m) continue
    const pci = parsePciAddress(m[1]!)
    if (!pci) continue
    out.push({
      address: formatPciAddress(pci),
      className: m[2]!,
      classCode: m[3]!.toLowerCase(),
      description: m[4]!.trim(),
      vendorId: m[5]!.toLowerCase(),
      productId: m[6]!.toLowerCase(),
    })
  }
  return out
}

/** The model in an lspci description: the bracketed marketing name if any (`A100 PCIe 40GB`), else the text. */
export function lspciModel(description: string): string {
  const bracket = /\[([^\]]+)\]\s*$/.exec(description)
  return (bracket ? bracket[1]! : description.replace(/^NVIDIA Corporation\s+/, '')).trim()
}

/**
 * The vGPU trait of an mdev type: `CUSTOM_NVIDIA_VGPU_<NAME>`, NAME being the `name` file's
 * last word (`GRID A100-4C` → `A100_4C`), or, without a usable name, the type id (`NVIDIA_471`).
 */
export function vgpuTrait(type: Pick<MdevType, 'id' | 'name'>): string {
  const words = (type.name ?? '').trim().split(/\s+/)
  const fromName = traitSegment(words[words.length - 1] ?? '')
  return `CUSTOM_NVIDIA_VGPU_${fromName === '' ? traitSegment(type.id) : fromName}`
}

/** What discover() gathered for one NVIDIA display function. */
export interface NvidiaFunction extends PciFunction {
  mdevTypes: MdevType[]
}

/** Host facts for {@link buildNvidiaDevices}. */
export interface NvidiaHostFacts {
  functions: readonly NvidiaFunction[]
  lspci: readonly LspciEntry[]
  smi: readonly NvidiaSmiGpu[]
}

/** Options of {@link buildNvidiaDevices} (parsed driver options). */
export interface NvidiaBuildOptions {
  /** mdev type ids to offer; undefined offers every type. */
  vgpuTypes?: ReadonlySet<string>
  /** The one mdev type a pGPU offers, by its control path (`dddd:bb:dd.f`); wins over `vgpuTypes`. */
  vgpuTypeByAddress?: ReadonlyMap<string, string>
}

/** The traits of a pGPU or VF deployable. */
export function pgpuTraits(productId: string): string[] {
  return [OWNER_CYBORG, `CUSTOM_NVIDIA_${traitSegment(productId)}`]
}

/**
 * Deployables for one function that a VM can get. A function with offered mdev types (`offer`:
 * the pGPU's chosen type, else those in `vgpu_types`, else all) gives one VGPU deployable per type
 * with instances (`<host>_<addr>_<type>`; a type with 0 instances is left out, Placement refuses a
 * total of 0); any other function is offered whole (PGPU, `<host>_<addr>`).
 */
function functionDeployables(
  hostname: string,
  fn: NvidiaFunction,
  productId: string,
  offer: ReadonlySet<string> | undefined,
): DiscoveredDeployable[] {
  const types = fn.mdevTypes.filter((t) => offer === undefined || offer.has(t.id))
  if (types.length > 0)
    return types.filter((t) => t.total > 0).map((t) => vgpuDeployable(hostname, fn, productId, t))
  return [
    {
      name: `${hostname}_${fn.address}`,
      numAccelerators: 1,
      driverName: 'nvidia-gpu',
      attributes: rcAndTraits('PGPU', pgpuTraits(productId)),
      attachHandles: [{ type: AttachType.PCI, info: pciHandleInfo(fn.pci) }],
    },
  ]
}

/** One VGPU deployable: `total` MDEV handles of type `t` on `fn`. */
function vgpuDeployable(
  hostname: string,
  fn: NvidiaFunction,
  productId: string,
  t: MdevType,
): DiscoveredDeployable {
  return {
    name: `${hostname}_${fn.address}_${t.id}`,
    numAccelerators: t.total,
    driverName: 'nvidia-gpu',
    attributes: rcAndTraits('VGPU', [...pgpuTraits(productId), vgpuTrait(t)]),
    attachHandles: Array.from({ length: t.total }, (_, i) => ({
      type: AttachType.MDEV,
      info: { asked_type: t.id, vgpu_mark: `${t.id}_${i}`, ...pciHandleInfo(fn.pci) },
    })),
  }
}

const byAddress = <T extends { address: string }>(a: T, b: T): number =>
  a.address < b.address ? -1 : a.address > b.address ? 1 : 0

/**
 * Builds the GPU devices (pure). One device per physical GPU (control path = the PF). A PF with
 * SR-IOV VFs offers its VFs (each as PGPU, or as its vGPU types), never itself; a VF whose PF is
 * not listed is still grouped under its PF's address. MIG instances are listed in
 * `vendorBoardInfo.mig_devices` (see docs/drivers.md).
 */
export function buildNvidiaDevices(
  hostname: string,
  facts: NvidiaHostFacts,
  options: NvidiaBuildOptions = {},
): DiscoveredDevice[] {
  const lspci = new Map(facts.lspci.map((e) => [e.address, e]))
  const smi = new Map(facts.smi.map((g) => [g.address, g]))
  const groups = new Map<string, { pf?: NvidiaFunction; vfs: NvidiaFunction[] }>()
  for (const fn of [...facts.functions].sort(byAddress)) {
    const key = fn.physfn ?? fn.address
    const group = groups.get(key) ?? { vfs: [] }
    if (fn.physfn === undefined) group.pf = fn
    else group.vfs.push(fn)
    groups.set(key, group)
  }
  const devices: DiscoveredDevice[] = []
  for (const [address, { pf, vfs }] of [...groups].sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  )) {
    const first = pf ?? vfs[0]!
    const pci: PciAddress = pf?.pci ?? parsePciAddress(address)!
    const productId = first.productId
    const gpu = smi.get(address)
    const lspciEntry = lspci.get(address)
    const model = gpu?.productName ?? (lspciEntry ? lspciModel(lspciEntry.description) : productId)
    // A PF with VFs offers its VFs, never itself as well.
    const offered = vfs.length > 0 ? vfs : [first]
    const chosen = options.vgpuTypeByAddress?.get(address)
    const offer = chosen === undefined ? options.vgpuTypes : new Set([chosen])
    const deployables = offered.flatMap((fn) => functionDeployables(hostname, fn, productId, offer))
    const vendorBoardInfo: Record<string, unknown> = {}
    if (gpu?.productName !== undefined) vendorBoardInfo.product_name = gpu.productName
    if (gpu?.uuid !== undefined) vendorBoardInfo.uuid = gpu.uuid
    if (gpu?.migMode !== undefined) vendorBoardInfo.mig_mode = gpu.migMode
    if (gpu && gpu.migDevices.length > 0) {
      vendorBoardInfo.mig_devices = gpu.migDevices.map((d) => ({
        index: d.index,
        gpu_instance_id: d.gpuInstanceId,
        compute_instance_id: d.computeInstanceId,
        ...(d.memoryTotal === undefined ? {} : { memory_total: d.memoryTotal }),
        ...(d.multiprocessorCount === undefined
          ? {}
          : { multiprocessor_count: d.multiprocessorCount }),
      }))
    }
    devices.push({
      type: DeviceType.GPU,
      vendor: NVIDIA_VENDOR_ID,
      model,
      stdBoardInfo: {
        vendor_id: NVIDIA_VENDOR_ID,
        product_id: productId,
        class: first.classCode,
        ...(vfs.length > 0 ? { sriov_vfs: vfs.map((v) => v.address) } : {}),
      },
      vendorBoardInfo: Object.keys(vendorBoardInfo).length > 0 ? vendorBoardInfo : null,
      controlPath: { type: 'PCI', info: { ...pci } },
      // The board's serial is its identity (docs/identity.md), wherever it is plugged.
      ...(gpu?.serial === undefined ? {} : { serial: gpu.serial }),
      deployables,
    })
  }
  return devices
}

/**
 * Options of the NVIDIA GPU driver (strings, from config), with the health thresholds of
 * {@link PciHealthOptions} (read from the GPU's PF; `link_check` defaults to `width` here) and
 * {@link NvidiaHealthOptions} (`ecc_uncorrectable_failed`, `retired_pages_pending`), and `clean` /
 * `clean_timeout` (nvidia-clean.ts, docs/cleaning.md).
 */
export interface NvidiaGpuDriverOptions
  extends PciHealthOptions, NvidiaHealthOptions, CleanOptions {
  /** Comma-separated mdev type ids to offer as VGPU (e.g. `nvidia-471,nvidia-472`); `*` offers all. @default '*' */
  vgpu_types?: string
  /** `0000:3b:00.0=nvidia-471,…`: one pGPU's only type, set by configure (nvidia-vgpu-config.ts). @default '' */
  vgpu_type_by_address?: string
  /** Run `lspci -nnD` for model names (`true`/`false`). @default 'true' */
  lspci?: string
  /** Run `nvidia-smi -q -x` for product names and MIG (`true`/`false`). @default 'true' */
  nvidia_smi?: string
  /** The sysfs directory to scan. @default '/sys/bus/pci/devices' */
  sysfs_root?: string
}

const isDisplayNvidia = (fn: PciFunction): boolean =>
  fn.vendorId === NVIDIA_VENDOR_ID && fn.classCode.startsWith('03')

async function optionalCommand(host: HostProbe, command: string, args: string[]): Promise<string> {
  try {
    return await host.exec(command, args)
  } catch {
    return '' // not installed, no GPU driver loaded, or failed: the data is optional
  }
}

/**
 * Creates the NVIDIA GPU driver; `deviceStats()` gives each GPU's usage (nvidia-telemetry.ts).
 * @throws ConfigError if a health option is invalid
 */
export function createNvidiaGpuDriver(
  deps: DriverDeps,
  options: NvidiaGpuDriverOptions = {},
): AcceleratorDriver & DeviceStatsCapability {
  const {
    vgpu_types: vgpuTypes = '*',
    lspci = 'true',
    nvidia_smi: nvidiaSmi = 'true',
    sysfs_root: root = '/sys/bus/pci/devices',
  } = options
  const types = vgpuTypes
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  const byAddress = parseVgpuTypeByAddress(options.vgpu_type_by_address ?? '')
  const build: NvidiaBuildOptions = {
    ...(types.includes('*') ? {} : { vgpuTypes: new Set(types) }),
    vgpuTypeByAddress: byAddress,
  }
  const pci = pciHealthThresholds('nvidia-gpu', options, NVIDIA_PCI_HEALTH)
  const nvidia = nvidiaHealthThresholds(options)
  const sampler = createNvidiaSampler(deps.host, nvidiaSmi !== 'false')
  const settings = cleanSettings('nvidia-gpu', options, NVIDIA_CLEAN_TIMEOUT_S)
  return {
    name: 'nvidia-gpu',
    deviceType: DeviceType.GPU,
    cleanSettings: settings,
    ...createNvidiaCleanSteps(deps.host, {
      root,
      useNvidiaSmi: nvidiaSmi !== 'false',
      timeoutMs: settings.timeoutMs,
    }),
    configure: createVgpuConfigure(deps.host, { root, vgpuTypes: build.vgpuTypes, byAddress }),
    async discover({ signal } = {}) {
      throwIfAborted('nvidia-gpu', signal)
      const found = await listPciFunctions(deps.host, { root, signal, filter: isDisplayNvidia })
      if (found.length === 0) {
        sampler.discovered([])
        return []
      }
      const functions: NvidiaFunction[] = []
      for (const fn of found)
        functions.push({
          ...fn,
          mdevTypes: await readMdevTypes(deps.host, `${root}/${fn.address}`),
        })
      const [lspciText, run] = await Promise.all([
        lspci === 'false' ? '' : optionalCommand(deps.host, 'lspci', ['-nnD']),
        sampler.run(),
      ])
      throwIfAborted('nvidia-gpu', signal)
      const smi = parseNvidiaSmiXml(run.kind === 'ran' ? run.text : '')
      const devices = buildNvidiaDevices(
        deps.hostname,
        { functions, lspci: parseLspciNnD(lspciText), smi },
        build,
      )
      const present = new Set(found.map((f) => f.address))
      sampler.discovered(devices.map((d) => controlPathAddress(d.controlPath)))
      return withNvidiaHealth(deps.host, devices, { run, root, present, pci, nvidia })
    },
    deviceStats: (opts) => sampler.deviceStats(opts),
  }
}
