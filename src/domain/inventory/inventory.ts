/**
 * The one inventory: devices → deployables → attributes and attach handles.
 * Drivers produce `DiscoveredDevice` snapshots; the conductor diffs them into the database;
 * the v1 and v2 APIs are two views of the same rows.
 */

/** Device types of OpenStack Cyborg (`devices.type`). */
export const DeviceType = {
  GPU: 'GPU',
  FPGA: 'FPGA',
  AICHIP: 'AICHIP',
  QAT: 'QAT',
  NIC: 'NIC',
  SSD: 'SSD',
  PCI: 'PCI',
  /** An accelerator that no agent discovers, registered through `POST /v1/accelerators` (driver `remote`). */
  REMOTE: 'REMOTE',
} as const
export type DeviceType = (typeof DeviceType)[keyof typeof DeviceType]

/** Operator-set availability (`status` in the v2 API at ≥ 2.3). */
export const DeviceStatus = { enabled: 'enabled', maintaining: 'maintaining' } as const
export type DeviceStatus = (typeof DeviceStatus)[keyof typeof DeviceStatus]

/**
 * Lifecycle of seed 000: new devices are `inactive`; an operator marks them `ready`; the agent
 * runs the driver's install step (`installing`) and they become `active`, or `error` with a reason.
 * Only `active` devices are offered as inventory.
 */
export const Lifecycle = {
  inactive: 'inactive',
  ready: 'ready',
  installing: 'installing',
  active: 'active',
  error: 'error',
} as const
export type Lifecycle = (typeof Lifecycle)[keyof typeof Lifecycle]

export const Health = {
  ok: 'ok',
  degraded: 'degraded',
  failed: 'failed',
  unknown: 'unknown',
} as const
export type Health = (typeof Health)[keyof typeof Health]

/** How a VM attaches to an accelerator. TEST_PCI is the fake driver's (Nova ignores it). */
export const AttachType = { PCI: 'PCI', MDEV: 'MDEV', TEST_PCI: 'TEST_PCI' } as const
export type AttachType = (typeof AttachType)[keyof typeof AttachType]

/** A PCI address (BDF) as OpenStack Cyborg stores it: lower-case hex strings. */
export interface PciAddress {
  domain: string
  bus: string
  device: string
  function: string
}

/** The control path of a remote accelerator (device type REMOTE): the uuid it was registered with. */
export interface RemoteAddress {
  uuid: string
}

/**
 * How a device is reached on its host, unique per host (`devices.cpid_type` and `cpid_info`):
 * a PCI function, or a registered remote accelerator. Their canonical JSON never collide
 * (different keys).
 */
export type ControlPath =
  { type: 'PCI'; info: PciAddress } | { type: 'REMOTE'; info: RemoteAddress }

/** A control path as one string: `dddd:bb:dd.f` for PCI, `remote:<uuid>` for a remote accelerator. */
export function controlPathAddress(cp: ControlPath): string {
  if (cp.type === 'REMOTE') return `remote:${cp.info.uuid}`
  return `${cp.info.domain}:${cp.info.bus}:${cp.info.device}.${cp.info.function}`
}

/** A deployable as discovered by a driver: a unit that Placement sees as one resource provider. */
export interface DiscoveredDeployable {
  /** Globally unique; convention `<host>_<pci address>` (fake: `<host>_FakeDevice`). */
  name: string
  /**
   * A hint for the conductor: the uuid to give the deployable when it is first inserted (a remote
   * accelerator keeps the uuid it was registered with). Ignored for a deployable that exists.
   */
  uuid?: string
  numAccelerators: number
  driverName: string
  /** Key `rc` is the resource class; keys starting with `trait` are Placement traits. */
  attributes: { key: string; value: string }[]
  attachHandles: { type: AttachType; info: Record<string, string> }[]
}

/** A device as discovered by a driver, identified on its host by its control path. */
export interface DiscoveredDevice {
  type: DeviceType
  vendor: string
  model: string
  stdBoardInfo: Record<string, unknown> | null
  vendorBoardInfo: Record<string, unknown> | null
  controlPath: ControlPath
  /**
   * The hardware's serial number (GPU serial, NVMe controller serial, FPGA board id), when the
   * driver can read one: the device's identity on its host, kept when it moves to another slot
   * (docs/identity.md). Absent: the control path is its identity.
   */
  serial?: string
  deployables: DiscoveredDeployable[]
  /** What the driver read of the device's health; absent means ok. */
  health?: ReportedHealth
}

/**
 * A driver's finding: `degraded` is still offered and shown; `failed` is fenced; `unknown` (the probe
 * could not run) is fenced too, as the conductor's `unknown` for a silent agent is.
 */
export interface ReportedHealth {
  state: 'ok' | 'degraded' | 'failed' | 'unknown'
  /** Why, when not ok (e.g. `2 uncorrectable ECC errors`). */
  reason?: string
}

/** What an agent reports: every device its drivers found, with a content hash of the list. */
export interface InventorySnapshot {
  host: string
  /** sha256 of the canonical JSON of `devices`; an unchanged hash costs the conductor no write. */
  hash: string
  devices: DiscoveredDevice[]
}

export interface Device {
  id: number
  uuid: string
  type: DeviceType
  vendor: string
  model: string
  stdBoardInfo: string | null
  vendorBoardInfo: string | null
  hostname: string
  status: DeviceStatus
  lifecycle: Lifecycle
  lifecycleReason: string | null
  health: Health
  /** Why health is not ok (a silent agent, a probe's finding); null when ok. */
  healthReason: string | null
  /** When health last changed; null if never. */
  healthUpdatedAt: string | null
  controlPath: PciAddress
  createdAt: string
  updatedAt: string | null
}

export interface Deployable {
  id: number
  uuid: string
  name: string
  deviceId: number
  parentId: number | null
  rootId: number | null
  numAccelerators: number
  rpUuid: string | null
  driverName: string | null
  bitstreamId: string | null
  createdAt: string
  updatedAt: string | null
}

export interface Attribute {
  id: number
  uuid: string
  deployableId: number
  key: string
  value: string
  createdAt: string
  updatedAt: string | null
}

export interface AttachHandle {
  id: number
  uuid: string
  deployableId: number
  type: AttachType
  info: Record<string, string>
  inUse: boolean
  /** An MDEV unit's mdev of its current or last allocation (migration 0018); null: `uuid`. */
  mdevUuid?: string | null
  createdAt: string
  updatedAt: string | null
}

/**
 * The uuid of the mdev of an MDEV unit (docs/nova.md, "MDEV attach handles"): the one minted when
 * it was claimed, else (claimed before migration 0018, or imported) the handle's own uuid, which
 * is what OpenStack Cyborg creates the mdev with.
 */
export function mdevUuidOf(handle: { uuid: string; mdevUuid?: string | null }): string {
  return handle.mdevUuid ?? handle.uuid
}

/**
 * Canonical JSON: keys sorted at every level, so equal data gives equal strings (and hashes).
 * Iterative, so that no nesting overflows the stack (an agent's report or a bus message may nest
 * deeper than an API body, which src/api/body-parser.ts caps); what JSON.stringify leaves out or
 * writes as null, this does too. @throws TypeError on a cycle, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (!isContainer(value)) return JSON.stringify(value)
  const out: string[] = []
  const stack: Frame[] = []
  const onPath = new Set<object>()
  const open = (v: object) => {
    if (onPath.has(v)) throw new TypeError('canonicalJson: a cyclic structure')
    onPath.add(v)
    const keys = Array.isArray(v) ? null : Object.keys(v).sort()
    out.push(keys === null ? '[' : '{')
    stack.push({ value: v, keys, i: 0 })
  }
  open(value)
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!
    const size = f.keys === null ? (f.value as unknown[]).length : f.keys.length
    if (f.i >= size) {
      out.push(f.keys === null ? ']' : '}')
      onPath.delete(f.value)
      stack.pop()
      continue
    }
    const at = f.i++
    if (f.keys === null) {
      if (at > 0) out.push(',')
      const item = (f.value as unknown[])[at]
      if (isContainer(item)) open(item)
      else out.push(JSON.stringify(item) ?? 'null')
    } else {
      const key = f.keys[at]!
      const item = (f.value as Record<string, unknown>)[key]
      const text = isContainer(item) ? undefined : JSON.stringify(item)
      if (!isContainer(item) && text === undefined) continue
      if (out[out.length - 1] !== '{') out.push(',')
      out.push(JSON.stringify(key), ':')
      if (isContainer(item)) open(item)
      else out.push(text!)
    }
  }
  return out.join('')
}

/** An array or object being written by canonicalJson: its sorted keys (null for an array), next index. */
interface Frame {
  value: object
  keys: string[] | null
  i: number
}

const isContainer = (v: unknown): v is object => v !== null && typeof v === 'object'

/**
 * Whether a device's accelerators may be allocated: active (seed 000), enabled by the operator,
 * healthy (ok, or degraded: still offered), and not pending removal. Placement gets
 * `reserved = total` otherwise, and a standalone bind never picks it.
 */
export function isOffered(d: {
  lifecycle: string
  status: string
  health: string
  removalPending: boolean
}): boolean {
  return (
    d.lifecycle === Lifecycle.active &&
    d.status === DeviceStatus.enabled &&
    (d.health === Health.ok || d.health === Health.degraded) &&
    !d.removalPending
  )
}
