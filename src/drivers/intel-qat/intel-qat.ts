/**
 * Intel QuickAssist (QAT) driver: finds QAT physical functions in PCI sysfs and reports one deployable
 * per SR-IOV virtual function (or one for the PF itself when it has no VFs), with the services offered.
 *
 * Formats read, all through {@link HostProbe} (see pci-sysfs.ts for the generic PCI files):
 * - `<pf>/virtfn<N>/uevent`: the VF's `PCI_SLOT_NAME=` line (Documentation/ABI/testing/sysfs-bus-pci).
 *   `virtfn<N>` is a symlink; reading through it needs no readlink, so fixtures store a directory;
 * - `<vf>/physfn/uevent`: the same, from the VF side (a VF listed at the top level is matched to its PF);
 * - `<pf>/qat/cfg_services`: `sym;asym`, `dc`, … (Documentation/ABI/testing/sysfs-driver-qat, QAT GEN4+).
 *   Older generations (DH895xCC, C3xxx, C62x) have no such file; their kernel driver enables every
 *   service, GEN4+ defaults to `sym;asym`.
 *
 * Each VF belongs to one PF and is reported once; a VF whose PF is not on the host (a VF passed into a VM)
 * is not reported.
 *
 * Health (issue 15): the worst of the PF's PCIe finding (pci-health.ts) and its `qat/state`
 * (qat-health.ts); a device's VF deployables share it.
 *
 * Configure: the PF's VF count, through `sriov_numvfs` (sriov-configure.ts).
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import {
  AttachType,
  DeviceType,
  type DiscoveredDevice,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import {
  createVfClaimer,
  listPciFunctions,
  parsePciAddress,
  pciHandleInfo,
  readOptional,
  readVirtfns,
  throwIfAborted,
  PCI_DEVICES_ROOT,
  type PciFunction,
} from '../pci/pci-sysfs.js'
import { rcAndTraits } from '../traits.js'
import { withHealth, worstHealth } from '../health.js'
import { pciHealth, pciHealthThresholds, type PciHealthOptions } from '../pci/pci-health.js'
import { qatStateHealth } from './qat-health.js'
import { cleanSettings, FLR_CLEAN_TIMEOUT_S, type CleanOptions } from '../clean.js'
import { flrCleanSteps } from '../pci/pci-clean.js'
import { createSriovConfigure } from '../pci/sriov-configure.js'

/** QAT PF device ids (vendor 8086) → model, from the kernel's drivers/crypto/intel/qat. */
export const QAT_PF_MODELS: Readonly<Record<string, string>> = {
  '0435': 'DH895XCC',
  '19e2': 'C3XXX',
  '37c8': 'C62X',
  '4940': '4XXX',
  '4942': '401XX',
  '4944': '402XX',
  '4946': '420XX',
}

/** GEN4+ PFs: they have `qat/cfg_services` and default to `sym;asym`. */
const GEN4 = new Set(['4940', '4942', '4944', '4946'])

/** The service tokens of sysfs-driver-qat `cfg_services`, in trait order. */
export const QAT_SERVICES = ['sym', 'asym', 'dc', 'dcc'] as const
export type QatService = (typeof QAT_SERVICES)[number]

/** The resource class of every QAT deployable. */
export const QAT_RESOURCE_CLASS = 'CUSTOM_QAT'

/** Placement trait of a service: `sym` → `CUSTOM_QAT_SYM`. */
export const qatServiceTrait = (service: QatService): string =>
  `CUSTOM_QAT_${service.toUpperCase()}`

/**
 * Parses sysfs-driver-qat `cfg_services` (`sym;asym`, `asym;dc`, `dcc`, …) into the known services in
 * canonical order. Unknown tokens are dropped, so the traits stay a fixed, documented set.
 */
export function parseQatServices(text: string): QatService[] {
  const tokens = new Set(
    text
      .trim()
      .toLowerCase()
      .split(/[;,\s]+/),
  )
  return QAT_SERVICES.filter((s) => tokens.has(s))
}

/** The services of a PF whose `cfg_services` is missing, unreadable or names no known service. */
export function defaultQatServices(productId: string): QatService[] {
  return GEN4.has(productId) ? ['sym', 'asym'] : ['sym', 'asym', 'dc']
}

/** What discover() learned about one QAT PF. */
export interface QatPf {
  /** Canonical PF address. */
  address: string
  /** 4 lower-case hex digits. */
  productId: string
  services: QatService[]
  /** Canonical VF addresses, each once. */
  vfs: string[]
}

/** Builds the device of one PF: one deployable per VF, or one for the PF when it has none. */
export function qatDevice(pf: QatPf, hostname: string): DiscoveredDevice {
  const units = pf.vfs.length > 0 ? pf.vfs : [pf.address]
  return {
    type: DeviceType.QAT,
    vendor: '0x8086',
    model: QAT_PF_MODELS[pf.productId] ?? pf.productId,
    stdBoardInfo: { vendor_id: '0x8086', device_id: `0x${pf.productId}` },
    vendorBoardInfo: { services: pf.services.join(';'), num_vfs: pf.vfs.length },
    controlPath: { type: 'PCI', info: parsePciAddress(pf.address)! },
    deployables: units.map((unit) => ({
      name: `${hostname}_${unit}`,
      numAccelerators: 1,
      driverName: 'intel-qat',
      attributes: rcAndTraits(QAT_RESOURCE_CLASS, pf.services.map(qatServiceTrait)),
      attachHandles: [{ type: AttachType.PCI, info: pciHandleInfo(parsePciAddress(unit)!) }],
    })),
  }
}

/**
 * Groups QAT functions into PFs. `virtfn` lists the VFs a PF names; `vfs` are the top-level functions
 * (whose `physfn` names their PF). A VF is given to the first PF (in address order) that claims it.
 */
export function groupQatPfs(
  pfs: readonly { fn: PciFunction; services: QatService[]; virtfn: string[] }[],
  all: readonly PciFunction[],
): QatPf[] {
  const claim = createVfClaimer(all, new Set(pfs.map((p) => p.fn.address)))
  return pfs.map(({ fn, services, virtfn }) => ({
    address: fn.address,
    productId: fn.productId,
    services,
    vfs: claim(fn.address, virtfn),
  }))
}

/**
 * Options of the `intel-qat` driver: the PCIe health thresholds (pci-health.ts, docs/drivers.md),
 * and `clean` / `clean_timeout` (a function reset of the VF, docs/cleaning.md).
 */
export type IntelQatDriverOptions = PciHealthOptions & CleanOptions

/**
 * Creates the `intel-qat` driver.
 * @throws ConfigError for a bad health option
 */
export function createIntelQatDriver(
  deps: DriverDeps,
  options: IntelQatDriverOptions = {},
): AcceleratorDriver {
  const { host, hostname } = deps
  const pciThresholds = pciHealthThresholds('intel-qat', options)
  const settings = cleanSettings('intel-qat', options, FLR_CLEAN_TIMEOUT_S)
  return {
    name: 'intel-qat',
    deviceType: DeviceType.QAT,
    cleanSettings: settings,
    ...flrCleanSteps(host, 'intel-qat'),
    configure: createSriovConfigure(host, 'intel-qat'),
    async discover({ signal } = {}) {
      throwIfAborted('intel-qat', signal)
      const all = await listPciFunctions(host, {
        signal,
        filter: (f) => f.vendorId === '8086',
      })
      const pfFns = all.filter(
        (f) => Object.hasOwn(QAT_PF_MODELS, f.productId) && f.physfn === undefined,
      )
      const health = new Map<string, ReportedHealth | undefined>()
      const pfs = await Promise.all(
        pfFns.map(async (fn) => {
          const dir = `${PCI_DEVICES_ROOT}/${fn.address}`
          const [cfg, virtfn, pcie, state] = await Promise.all([
            readOptional(host, `${dir}/qat/cfg_services`),
            readVirtfns(host, dir),
            pciHealth(host, fn.address, pciThresholds),
            qatStateHealth(host, dir),
          ])
          const parsed = cfg === undefined ? [] : parseQatServices(cfg)
          health.set(fn.address, worstHealth([pcie, state]))
          return {
            fn,
            services: parsed.length > 0 ? parsed : defaultQatServices(fn.productId),
            virtfn,
          }
        }),
      )
      return groupQatPfs(pfs, all).map((pf) =>
        withHealth(qatDevice(pf, hostname), health.get(pf.address)),
      )
    },
  }
}
