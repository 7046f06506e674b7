/**
 * Ports for hardware drivers. A driver touches the OS only through `HostProbe`, so that every
 * driver runs in tests against recorded fixtures (a sysfs subtree and command outputs).
 */
import type { DeviceType, DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { DeviceConfigChange, DeviceLayout } from '../domain/device-config.js'
import { isCanonicalUuid } from '../domain/ids.js'
import type { Logger } from '../domain/logger.js'
import type {
  CleanCallOptions,
  CleanPolicy,
  CleanResult,
  CleanSettings,
  CleanTarget,
  VerifyResult,
} from './clean-types.js'

export type { CleanTarget } from './clean-types.js'
export type { DeviceConfigChange, DeviceLayout } from '../domain/device-config.js'

/** What {@link AcceleratorDriver.configure} did. */
export interface ConfigureOutcome {
  /** False when the device already had the asked layout: nothing was written. */
  changed: boolean
  /** The layout before the change. */
  previous: DeviceLayout
  /** The layout now. */
  applied: DeviceLayout
  /**
   * Driver options that hold the new layout (nvidia-gpu's `vgpu_type_by_address`): the agent merges
   * them into the driver's overrides, saves them and rebuilds the driver, so that the layout
   * survives a restart. Absent when the host keeps the layout itself (sysfs `sriov_numvfs`).
   */
  options?: Record<string, string>
}

/** What one clean of a unit did (clean.ts's `CleanReport`). */
export interface CleanRun {
  policy: CleanPolicy
  method: string
  evidence: string
  verifyEvidence?: string
  durationMs: number
}

/**
 * Runs a driver's clean and verify under its policy and time limit: clean.ts's `runClean`, which
 * src/main passes to the agent (the agent sees only this port).
 */
export type CleanRunner = (
  driver: AcceleratorDriver,
  target: CleanTarget,
  options: {
    signal?: AbortSignal
    log?: Logger
    /** Told the driver's own clean-and-verify step, which may outlast an abort it ignores. */
    onStep?: (step: Promise<unknown>) => void
  },
) => Promise<CleanRun>

/** The narrow view of the host that drivers may use. Paths are absolute (`/sys/...`). */
export interface HostProbe {
  /** File contents as text; throws if missing. */
  readFile(path: string): Promise<string>
  /** Entry names of a directory; throws if missing. */
  readDir(path: string): Promise<string[]>
  /** True if the path exists. */
  exists(path: string): Promise<boolean>
  /**
   * Runs a command (no shell) and returns stdout; throws DriverError on a non-zero exit.
   * `options.timeoutMs` overrides the probe's time limit for this call (flashing an FPGA takes minutes).
   */
  exec(command: string, args: readonly string[], options?: ExecOptions): Promise<string>
  /** Writes a file (privileged sysfs writes: driver_override, mdev create, …). */
  writeFile(path: string, data: string): Promise<void>
}

/** Per-call options of {@link HostProbe.exec}. */
export interface ExecOptions {
  /** Kill the command after this many milliseconds. @default the probe's own limit */
  timeoutMs?: number
}

export interface DriverDeps {
  host: HostProbe
  /** The host name that prefixes deployable names (`<host>_<pci address>`). */
  hostname: string
}

export interface AcceleratorDriver {
  /** Kebab-case id used in `[agent] enabled_drivers`, e.g. `fake`, `nvidia-gpu`. */
  readonly name: string
  readonly deviceType: DeviceType
  /** Finds the devices on this host. Must not throw on an empty host or garbage input. */
  discover(options?: { signal?: AbortSignal }): Promise<DiscoveredDevice[]>
  /**
   * Optional install step, run by the agent when an operator marks a device `ready` (seed 000
   * lifecycle: ready → installing → active | error). No install step means nothing to install.
   */
  install?(device: DiscoveredDevice): Promise<void>
  /**
   * Optional: programs the FPGA whose PCI function is `address` (`0000:3b:00.0`, the device's
   * control path) with the bitstream at the absolute path `imagePath` on this host.
   * @throws DriverError (code PROGRAM_FAILED) when the vendor tool fails
   */
  program?(address: string, imagePath: string): Promise<void>
  /**
   * Optional: cleans one unit after its allocation ended, before anyone may claim it again (issue
   * 18, docs/cleaning.md), with the driver's method (a function-level reset, a GPU reset, an NVMe
   * sanitize, a blank FPGA image, …). Callers go through `runClean` (clean.ts), which applies the
   * `clean` policy and the time limit and then calls {@link verify}.
   * @throws DriverError CLEAN_UNSUPPORTED (a tool or sysfs file is missing, or the device reports
   * it cannot), CLEAN_BUSY, CLEAN_FAILED, CLEAN_TARGET_INVALID or CLEAN_ABORTED
   */
  clean?(target: CleanTarget, options: CleanCallOptions): Promise<CleanResult>
  /**
   * Optional: checks, after {@link clean}, that the unit is back and as it was (present, same ids,
   * same binding, idle, erased per the device's own log). `cleaned` is what `clean` returned.
   * @throws DriverError VERIFY_FAILED naming what was read back
   */
  verify?(
    target: CleanTarget,
    cleaned: CleanResult,
    options: CleanCallOptions,
  ): Promise<VerifyResult>
  /**
   * Optional: re-partitions `device` (found by this driver's last discovery) by one change: its
   * SR-IOV VF count or its vGPU type (docs/drivers.md, "Configure"). Never called under an
   * allocation (the conductor checks). The agent rediscovers afterwards. `signal` is honoured
   * before the first write only: a change once begun is finished or undone.
   * @throws InvalidInputError naming the field in `details.field` (`sriov_numvfs`, `vgpu_type`):
   *   out of range, unknown type, or CONFIGURE_UNSUPPORTED for a change this driver cannot make;
   *   DriverError CONFIGURE_FAILED when the host refused part-way, with `details.restored` true
   *   when the previous layout was put back
   */
  configure?(
    device: DiscoveredDevice,
    change: DeviceConfigChange,
    options?: { signal?: AbortSignal },
  ): Promise<ConfigureOutcome>
  /** The driver's `clean` / `clean_timeout` options, parsed (the defaults of `runClean`). */
  readonly cleanSettings?: CleanSettings
  /**
   * Optional: the remote-registration capability (seed 004's generic driver; AgentRpc 1.4
   * `registerRemote`), which only the `remote` driver has. Replaces the remote accelerators that the
   * next `discover()` reports: the agent calls it before every discovery with the registrations it
   * keeps in its cache. An agent with no enabled driver that has it refuses registrations.
   */
  setRemoteAccelerators?(accelerators: readonly RemoteAccelerator[]): void
}

export type DriverFactory = (
  deps: DriverDeps,
  options?: Record<string, string>,
) => AcceleratorDriver

/**
 * The drivers an agent may (re)build by name, passed in by the composition root (src/main gives the
 * literal registry of `index.ts`), so that the agent depends on this port only.
 */
export interface DriverRegistry {
  /** Factories by driver name, to rebuild a driver with new options. */
  readonly factories: Readonly<Record<string, DriverFactory>>
  /** Other accepted names (OpenStack Cyborg's entry-point names, e.g. `fake_driver`) → driver name. */
  readonly aliases: Readonly<Record<string, string>>
}

/** The name the remote driver is enabled under (`[agent] enabled_drivers`). */
export const REMOTE_DRIVER = 'remote'

/** One remote registration: the accelerator's (deployable's) name, globally unique, and its uuid. */
export interface RemoteAccelerator {
  name: string
  /** Lower-case UUID; the deployable gets it, and the device's control path is `{uuid}`. */
  uuid: string
}

/** Whether `value` is a well-formed registration (non-empty name of at most 255 characters, lower-case uuid). */
export function isRemoteAccelerator(value: unknown): value is RemoteAccelerator {
  if (value === null || typeof value !== 'object') return false
  const { name, uuid } = value as Record<string, unknown>
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= 255 &&
    typeof uuid === 'string' &&
    isCanonicalUuid(uuid)
  )
}
