/**
 * The vGPU type of a pGPU: the nvidia-gpu driver's `configure` and its `vgpu_type_by_address`
 * option (docs/drivers.md, "Configure").
 *
 * A pGPU offers one VGPU deployable per mdev type (all of them, or those of `vgpu_types`). An
 * operator may pick the one type its vGPUs use instead: `configure(device, { vgpuType })` checks
 * that the type is one of the GPU's `mdev_supported_types` (on its VFs, for an SR-IOV GPU) with
 * instances, and answers the option `vgpu_type_by_address` with the GPU's entry added
 * (`0000:3b:00.0=nvidia-471,…`). The agent merges that into the driver's overrides, saves them in
 * its cache and rebuilds the driver, so the choice holds across restarts and the next discovery
 * offers that type only. `*` drops the choice. Nothing is written to sysfs: an mdev of the type is
 * created when a vGPU is bound (the conductor asks only for a GPU with no allocation, whose mdevs
 * are gone).
 */
import type { AcceleratorDriver, ConfigureOutcome, HostProbe } from '../driver.js'
import { ConfigError, InvalidInputError } from '../../domain/errors.js'
import {
  ANY_VGPU_TYPE,
  configureUnsupported,
  type DeviceLayout,
} from '../../domain/device-config.js'
import { controlPathAddress, type DiscoveredDevice } from '../../domain/inventory/inventory.js'
import { readMdevTypes, type MdevType } from './mdev-types.js'
import { formatPciAddress, parsePciAddress } from '../pci/pci-sysfs.js'

/** The option that holds each pGPU's chosen type. */
export const VGPU_TYPE_BY_ADDRESS = 'vgpu_type_by_address'

const TYPE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}$/

/**
 * Parses `0000:3b:00.0=nvidia-471,0000:d8:00.0=nvidia-222` into control path → mdev type id (PCI
 * addresses made canonical). Blank entries are skipped.
 * @throws ConfigError naming the option, for a malformed entry or an address given twice
 */
export function parseVgpuTypeByAddress(text: string): Map<string, string> {
  const out = new Map<string, string>()
  const refuse = (problem: string) =>
    new ConfigError(`nvidia-gpu driver option ${VGPU_TYPE_BY_ADDRESS}: ${problem}`, {
      details: { option: VGPU_TYPE_BY_ADDRESS },
    })
  for (const raw of text.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const eq = entry.indexOf('=')
    const pci = eq < 0 ? undefined : parsePciAddress(entry.slice(0, eq))
    const type = entry.slice(eq + 1).trim()
    if (pci === undefined || !TYPE_ID.test(type))
      throw refuse(`'${entry}' is not <pci address>=<mdev type>, e.g. 0000:3b:00.0=nvidia-471`)
    const address = formatPciAddress(pci)
    if (out.has(address)) throw refuse(`${address} is given twice`)
    out.set(address, type)
  }
  return out
}

/** The option's text for `map`, by address. */
export function formatVgpuTypeByAddress(map: ReadonlyMap<string, string>): string {
  return [...map]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([address, type]) => `${address}=${type}`)
    .join(',')
}

/** What {@link createVgpuConfigure} needs of the driver's options. */
export interface VgpuConfigureOptions {
  /** The sysfs directory the driver scans. */
  root: string
  /** `vgpu_types`, parsed; undefined offers every type. */
  vgpuTypes: ReadonlySet<string> | undefined
  /** `vgpu_type_by_address`, parsed. */
  byAddress: ReadonlyMap<string, string>
}

/** The functions a GPU offers: its VFs (`stdBoardInfo.sriov_vfs`), else the PF itself. */
function offeredFunctions(device: DiscoveredDevice, address: string): string[] {
  const vfs = device.stdBoardInfo?.sriov_vfs
  const list = Array.isArray(vfs) ? vfs.filter((v): v is string => typeof v === 'string') : []
  return list.length > 0 ? list : [address]
}

/** The nvidia-gpu driver's `configure`: supports `vgpuType` only. */
export function createVgpuConfigure(
  host: HostProbe,
  options: VgpuConfigureOptions,
): NonNullable<AcceleratorDriver['configure']> {
  const { root, vgpuTypes, byAddress } = options
  return async (device, change): Promise<ConfigureOutcome> => {
    const address = controlPathAddress(device.controlPath)
    if (change.sriovNumvfs !== undefined)
      throw configureUnsupported('nvidia-gpu', { sriovNumvfs: change.sriovNumvfs }, address)
    const wanted = change.vgpuType
    if (wanted === undefined || device.controlPath.type !== 'PCI')
      throw configureUnsupported('nvidia-gpu', {}, address)
    const found: MdevType[] = (
      await Promise.all(
        offeredFunctions(device, address).map((fn) => readMdevTypes(host, `${root}/${fn}`)),
      )
    ).flat()
    const supported = [...new Set(found.map((t) => t.id))].sort()
    const layout = (choice: string | undefined): DeviceLayout => ({
      ...(choice === undefined ? {} : { vgpuType: choice }),
      vgpuTypes: supported.filter((id) =>
        choice === undefined ? vgpuTypes === undefined || vgpuTypes.has(id) : id === choice,
      ),
    })
    const chosen = byAddress.get(address)
    const previous = layout(chosen)
    const next = new Map(byAddress)
    if (wanted === ANY_VGPU_TYPE) next.delete(address)
    else {
      checkType(wanted, address, supported, found)
      next.set(address, wanted)
    }
    const choice = next.get(address)
    if (choice === chosen) return { changed: false, previous, applied: previous }
    return {
      changed: true,
      previous,
      applied: layout(choice),
      options: { [VGPU_TYPE_BY_ADDRESS]: formatVgpuTypeByAddress(next) },
    }
  }
}

/**
 * Refuses a type the GPU does not support, and one with no instance at all (`available_instances`
 * 0 and no mdev): choosing it would leave the GPU offering nothing. On GPUs that run one type at a
 * time, other types read 0 while mdevs of another type exist; those have to go first.
 */
function checkType(
  type: string,
  address: string,
  supported: readonly string[],
  found: readonly MdevType[],
): void {
  const details = { field: 'vgpu_type', driver: 'nvidia-gpu', address, supported }
  if (!supported.includes(type)) {
    const known = supported.length > 0 ? supported.join(', ') : 'none (no mdev_supported_types)'
    throw new InvalidInputError(
      `vgpu_type ${type} is not an mdev type of ${address}; its types: ${known}`,
      { code: 'VGPU_TYPE_UNKNOWN', details },
    )
  }
  const instances = found.filter((t) => t.id === type).reduce((n, t) => n + t.total, 0)
  if (instances === 0)
    throw new InvalidInputError(
      `vgpu_type ${type} has no instances on ${address} (available_instances 0 and no mdev of it); mdevs of another type may have to be removed first`,
      { code: 'VGPU_TYPE_UNAVAILABLE', details },
    )
}
