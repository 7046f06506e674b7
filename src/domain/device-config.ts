/**
 * Re-partitioning a device (AgentRpc 1.6 `configureDevice`; docs/drivers.md, "Configure"): the
 * change an operator asks for, and the layout a driver reads before and after it. The agent checks
 * every request here before a driver sees it; the drivers check the values against the hardware.
 */
import { InvalidInputError } from './errors.js'

/** One change of how a device is divided. Exactly one field is set. */
export interface DeviceConfigChange {
  /** SR-IOV: how many VFs the PF should have (its sysfs `sriov_numvfs`), 0 to `sriov_totalvfs`. */
  sriovNumvfs?: number
  /** vGPU: the mdev type id every vGPU of the pGPU uses (`nvidia-471`); `*` drops the choice. */
  vgpuType?: string
}

/** How a device is divided, as far as a {@link DeviceConfigChange} can alter it. */
export interface DeviceLayout {
  /** SR-IOV: the VFs the PF has. */
  sriovNumvfs?: number
  /** vGPU: the mdev type chosen for this pGPU; absent while none is chosen. */
  vgpuType?: string
  /** vGPU: the mdev types the pGPU offers (one VGPU deployable each), sorted. */
  vgpuTypes?: string[]
}

/** The field names errors carry in `details.field` (the API's words). */
export const ConfigField = {
  change: 'change',
  sriovNumvfs: 'sriov_numvfs',
  vgpuType: 'vgpu_type',
} as const
export type ConfigField = (typeof ConfigField)[keyof typeof ConfigField]

/** The largest VF count the kernel can hold (`sriov_totalvfs` is 16 bits). */
export const MAX_SRIOV_NUMVFS = 65535

/** `vgpuType` that drops a pGPU's chosen type: every type (or those of `vgpu_types`) again. */
export const ANY_VGPU_TYPE = '*'

/** An mdev type id as the kernel names them (`nvidia-471`, `i915-GVTg_V5_4`): one path segment. */
const MDEV_TYPE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}$/

function refuse(field: ConfigField, message: string, code: string): never {
  throw new InvalidInputError(message, { code, details: { field } })
}

/**
 * Checks a requested change: an object with exactly one of `sriovNumvfs` (an integer from 0 to
 * 65535) and `vgpuType` (an mdev type id, or `*`), and nothing else.
 * @throws InvalidInputError naming the field (`change`, `sriov_numvfs`, `vgpu_type`)
 */
export function parseDeviceConfigChange(value: unknown): DeviceConfigChange {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    refuse('change', 'change must be an object: { sriovNumvfs } or { vgpuType }', 'CHANGE_INVALID')
  const entries = Object.entries(value as object).filter(([, v]) => v !== undefined)
  const unknown = entries.map(([k]) => k).filter((k) => k !== 'sriovNumvfs' && k !== 'vgpuType')
  if (unknown.length > 0)
    refuse('change', `change has unknown fields: ${unknown.join(', ')}`, 'CHANGE_INVALID')
  if (entries.length !== 1)
    refuse('change', 'change must set exactly one of sriovNumvfs and vgpuType', 'CHANGE_INVALID')
  const { sriovNumvfs, vgpuType } = value as Record<string, unknown>
  if (sriovNumvfs !== undefined) {
    if (
      typeof sriovNumvfs !== 'number' ||
      !Number.isInteger(sriovNumvfs) ||
      sriovNumvfs < 0 ||
      sriovNumvfs > MAX_SRIOV_NUMVFS
    ) {
      refuse(
        'sriov_numvfs',
        `sriov_numvfs must be an integer from 0 to ${MAX_SRIOV_NUMVFS}, not ${JSON.stringify(sriovNumvfs)}`,
        'SRIOV_NUMVFS_INVALID',
      )
    }
    return { sriovNumvfs: sriovNumvfs as number }
  }
  if (typeof vgpuType !== 'string' || (vgpuType !== ANY_VGPU_TYPE && !MDEV_TYPE_ID.test(vgpuType)))
    refuse(
      'vgpu_type',
      `vgpu_type must be an mdev type id like nvidia-471 (or *), not ${JSON.stringify(vgpuType)}`,
      'VGPU_TYPE_INVALID',
    )
  return { vgpuType: vgpuType as string }
}

/**
 * Refuses a change a driver cannot make: InvalidInputError `CONFIGURE_UNSUPPORTED` naming the
 * driver and the change's field. Returned, so that the caller throws it.
 */
export function configureUnsupported(
  driver: string,
  change: DeviceConfigChange,
  address?: string,
): InvalidInputError {
  const field: ConfigField =
    change.sriovNumvfs !== undefined
      ? 'sriov_numvfs'
      : change.vgpuType !== undefined
        ? 'vgpu_type'
        : 'change'
  const what = field === 'change' ? 'device' : field
  return new InvalidInputError(`driver ${driver} cannot configure ${what}`, {
    code: 'CONFIGURE_UNSUPPORTED',
    details: { field, driver, ...(address === undefined ? {} : { address }) },
  })
}
