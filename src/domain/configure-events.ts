/**
 * `accelerator.device.configured` (INFO) and `.configure_failed` (ERROR): an operator's
 * re-partition of a device (docs/drivers.md, "Configure"), with the device as saved, the change,
 * the layout before and after, who asked, and the custody record. DeviceConfigurePayload 1.0.
 */
import type { DeviceConfigChange, DeviceLayout } from './device-config.js'
import { deviceData, event, versioned, type DeviceFacts, type NewEvent } from './events.js'

export interface ConfigureFacts {
  operationUuid: string
  change: DeviceConfigChange
  previous: DeviceLayout | null
  applied: DeviceLayout | null
  userId: string | null
  projectId: string | null
  /** Why it failed; null when it worked. */
  reason: string | null
  /** Whether the previous layout is back after a failure (null when it worked or is not known). */
  restored: boolean | null
  custodyRecordUuid: string | null
}

/** The API's (snake_case) form of a change or a layout. */
export function layoutView(layout: DeviceLayout | DeviceConfigChange | null) {
  if (layout === null) return null
  const l = layout as DeviceLayout
  return {
    ...(l.sriovNumvfs === undefined ? {} : { sriov_numvfs: l.sriovNumvfs }),
    ...(l.vgpuType === undefined ? {} : { vgpu_type: l.vgpuType }),
    ...(l.vgpuTypes === undefined ? {} : { vgpu_types: l.vgpuTypes }),
  }
}

export function deviceConfigureEvent(
  action: 'configured' | 'configure_failed',
  device: DeviceFacts,
  c: ConfigureFacts,
  at: string,
): NewEvent {
  const data = {
    ...deviceData(device),
    operation_uuid: c.operationUuid,
    change: layoutView(c.change),
    previous: layoutView(c.previous),
    applied: layoutView(c.applied),
    user_id: c.userId,
    project_id: c.projectId,
    reason: c.reason,
    restored: c.restored,
    custody_record_uuid: c.custodyRecordUuid,
  }
  const priority = action === 'configure_failed' ? 'ERROR' : 'INFO'
  return event('device', action, device, priority, versioned('DeviceConfigurePayload', data), at)
}
