/**
 * Intel NIC driver: offers SR-IOV capable Intel Ethernet ports (700 series X710/XL710/XXV710, 800 series
 * E810) that the operator mapped to a Neutron physical network, one deployable per VF (or per PF when it
 * has no VFs). The attach handle carries `physical_network`, which Nova matches against the Neutron port.
 *
 * Files read through {@link HostProbe} (Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-net):
 * `/sys/bus/pci/devices/<bdf>/{vendor,device}`, `<pf>/net/<ifname>` (the PF's netdev name),
 * `<pf>/virtfn<N>/uevent` and `<vf>/physfn/uevent` (`PCI_SLOT_NAME=`; symlinks read through, so
 * fixtures store directories).
 *
 * Options (Cyborg's `[<nic_type>]` sections):
 * - `physical_device_mappings`: `physnet1:eth2|eth3,physnet2:eth4`. Only ports named here are offered:
 *   an unmapped port may be the host's own uplink and must not be handed to a VM.
 * - `function_device_mappings`: `GTPV1:eth3|eth2,FOO:eth4`: NIC functions (loaded DDP profiles) per port,
 *   reported as `CUSTOM_<FUNCTION>` traits.
 *
 * Configure: a port's VF count, through `sriov_numvfs` (sriov-configure.ts).
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import { AttachType, DeviceType, type DiscoveredDevice } from '../../domain/inventory/inventory.js'
import {
  createVfClaimer,
  listPciFunctions,
  parsePciAddress,
  pciHandleInfo,
  readDirOptional,
  throwIfAborted,
  readVirtfns,
} from '../pci/pci-sysfs.js'
import { rcAndTraits, traitSegment } from '../traits.js'
import { pciHealthThresholds, withPciHealth, type PciHealthOptions } from '../pci/pci-health.js'
import { cleanSettings, FLR_CLEAN_TIMEOUT_S, type CleanOptions } from '../clean.js'
import { flrCleanSteps } from '../pci/pci-clean.js'
import { createSriovConfigure } from '../pci/sriov-configure.js'

/** Intel Ethernet PF device ids (vendor 8086) → model (drivers/net/ethernet/intel/{i40e,ice}). */
export const INTEL_NIC_PF_MODELS: Readonly<Record<string, string>> = {
  '1572': 'X710',
  '1583': 'XL710',
  '1584': 'XL710',
  '1589': 'X710',
  '158a': 'XXV710',
  '158b': 'XXV710',
  '1591': 'E810',
  '1592': 'E810',
  '1593': 'E810',
  '159b': 'E810',
}

/** The resource class of every Intel NIC deployable. */
export const INTEL_NIC_RESOURCE_CLASS = 'CUSTOM_NIC'

/**
 * Options of {@link createIntelNicDriver}, with the PCIe health thresholds of
 * {@link PciHealthOptions}, read from each port's PF (its VFs share the PF's link), and `clean` /
 * `clean_timeout` (a function reset of the VF, docs/cleaning.md).
 */
export interface IntelNicDriverOptions extends PciHealthOptions, CleanOptions {
  /** `physnet:ifname|ifname,…`. @default '' (no port offered) */
  physical_device_mappings?: string
  /** `FUNCTION:ifname|ifname,…`. @default '' */
  function_device_mappings?: string
}

/**
 * Parses `name:if1|if2,name2:if3` into interface → names, in the order written. Blank or malformed
 * entries are skipped. With `firstOnly`, an interface keeps the first name given to it.
 */
export function parseDeviceMappings(text: string, firstOnly = false): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const entry of text.split(',')) {
    const colon = entry.indexOf(':')
    if (colon <= 0) continue
    const name = entry.slice(0, colon).trim()
    if (name === '') continue
    for (const raw of entry.slice(colon + 1).split('|')) {
      const ifname = raw.trim()
      if (ifname === '') continue
      const names = out.get(ifname) ?? []
      if (!names.includes(name) && !(firstOnly && names.length > 0)) names.push(name)
      out.set(ifname, names)
    }
  }
  return out
}

/** What discover() learned about one mapped port. */
export interface IntelNicPort {
  /** Canonical PF address. */
  address: string
  /** 4 lower-case hex digits. */
  productId: string
  netdev: string
  physicalNetwork: string
  functions: string[]
  /** Canonical VF addresses. */
  vfs: string[]
}

/** Traits of a port's deployables: PF/VF kind, physnet, then functions. */
export function intelNicTraits(port: IntelNicPort, isVf: boolean): string[] {
  const physnet = traitSegment(port.physicalNetwork)
  return [
    isVf ? 'CUSTOM_NIC_VF' : 'CUSTOM_NIC_PF',
    ...(physnet === '' ? [] : [`CUSTOM_PHYSNET_${physnet}`]),
    ...port.functions
      .map(traitSegment)
      .filter((s) => s !== '')
      .map((s) => `CUSTOM_${s}`),
  ]
}

/** Builds the device of one port. */
export function intelNicDevice(port: IntelNicPort, hostname: string): DiscoveredDevice {
  const isVf = port.vfs.length > 0
  const units = isVf ? port.vfs : [port.address]
  return {
    type: DeviceType.NIC,
    vendor: '0x8086',
    model: INTEL_NIC_PF_MODELS[port.productId] ?? `0x${port.productId}`,
    stdBoardInfo: { vendor_id: '0x8086', device_id: `0x${port.productId}` },
    vendorBoardInfo: {
      netdev: port.netdev,
      physical_network: port.physicalNetwork,
      functions: port.functions.join('|'),
      num_vfs: port.vfs.length,
    },
    controlPath: { type: 'PCI', info: parsePciAddress(port.address)! },
    deployables: units.map((unit) => ({
      name: `${hostname}_${unit}`,
      numAccelerators: 1,
      driverName: 'intel-nic',
      attributes: rcAndTraits(INTEL_NIC_RESOURCE_CLASS, intelNicTraits(port, isVf)),
      attachHandles: [
        {
          type: AttachType.PCI,
          info: pciHandleInfo(parsePciAddress(unit)!, { physical_network: port.physicalNetwork }),
        },
      ],
    })),
  }
}

/**
 * Creates the `intel-nic` driver.
 * @throws ConfigError if a health option is invalid
 */
export function createIntelNicDriver(
  deps: DriverDeps,
  options: IntelNicDriverOptions = {},
): AcceleratorDriver {
  const { host, hostname } = deps
  const { physical_device_mappings: physnets = '', function_device_mappings: functions = '' } =
    options
  const physnetOf = parseDeviceMappings(physnets, true)
  const functionsOf = parseDeviceMappings(functions)
  const thresholds = pciHealthThresholds('intel-nic', options)
  const settings = cleanSettings('intel-nic', options, FLR_CLEAN_TIMEOUT_S)
  return {
    name: 'intel-nic',
    cleanSettings: settings,
    ...flrCleanSteps(host, 'intel-nic'),
    configure: createSriovConfigure(host, 'intel-nic'),
    deviceType: DeviceType.NIC,
    async discover(opts = {}) {
      throwIfAborted('intel-nic', opts.signal)
      if (physnetOf.size === 0) return []
      const all = await listPciFunctions(host, {
        signal: opts.signal,
        filter: (f) => f.vendorId === '8086',
      })
      const pfSet = new Set(
        all
          .filter((f) => Object.hasOwn(INTEL_NIC_PF_MODELS, f.productId) && f.physfn === undefined)
          .map((f) => f.address),
      )
      const claim = createVfClaimer(all, pfSet)
      const devices: DiscoveredDevice[] = []
      for (const fn of all) {
        if (!pfSet.has(fn.address)) continue
        const dir = `/sys/bus/pci/devices/${fn.address}`
        const netdev = (await readDirOptional(host, `${dir}/net`)).filter((n) => n !== '').sort()[0]
        const physicalNetwork = netdev === undefined ? undefined : physnetOf.get(netdev)?.[0]
        if (netdev === undefined || physicalNetwork === undefined) continue
        const vfs = claim(fn.address, await readVirtfns(host, dir))
        const port = { address: fn.address, productId: fn.productId, netdev, physicalNetwork, vfs }
        const fns = (functionsOf.get(netdev) ?? []).filter((f) => traitSegment(f) !== '')
        devices.push(intelNicDevice({ ...port, functions: fns }, hostname))
      }
      throwIfAborted('intel-nic', opts.signal)
      return withPciHealth(host, devices, thresholds)
    },
  }
}
