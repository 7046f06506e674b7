/**
 * Ports for hardware drivers. A driver touches the OS only through `HostProbe`, so that every
 * driver runs in tests against recorded fixtures (a sysfs subtree and command outputs).
 */
import type { DeviceType, DiscoveredDevice } from '../domain/inventory.js'

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
}

export type DriverFactory = (deps: DriverDeps, options?: Record<string, string>) => AcceleratorDriver
