/**
 * The agent's RPC contract, one topic per host: `cyborg.agent.<host>`; and the telemetry every
 * agent publishes on the fanout topic `cyborg.telemetry` (never stored, seed 000).
 *
 * Versions: 1.0 `discover`; 1.1 adds `prepare`, `release`, `createMdev`, `removeMdev`;
 * 1.2 adds `install`, `programFpga`, `setDriverEnabled`, `updateDriverOptions`; 1.3 `programFpgaImage`;
 * 1.4 adds the driver listing and the remote backend's registration (issue 5); 1.5 `cleanUnit` (issue 18);
 * 1.6 `configureDevice` (re-partitioning: SR-IOV VF count, vGPU type); 1.7 `abortClean` (an
 * operator's force-in-service stops a running clean, issue 27); 1.8 `cleanUnits` (many units in
 * one message, one answer entry per unit, issue 28). An older agent answers a newer method with
 * RPC_NO_METHOD (the server checks only the major version).
 */
import type { Metrics } from '../domain/metrics.js'
import type { MessageBus } from '../bus/bus.js'
import { createRpcClient, pickMethods, serveRpc, type RpcClientOptions } from './rpc.js'
import type { AgentDriverInfo, DriverAdminState, InventoryReportResult } from './admin-types.js'
import type { PciAddress } from '../domain/inventory/inventory.js'
import { cleanDeviceSamples, type DeviceSample } from '../domain/device-telemetry.js'
import type { DeviceConfigChange, DeviceLayout } from '../domain/device-config.js'
import type {
  CleanUnitRequest,
  CleanUnitResult,
  CleanUnitsRequest,
  CleanUnitsResult,
} from './clean-units.js'

export type { AgentDriverInfo, DriverAdminState } from './admin-types.js'
export type { DeviceConfigChange, DeviceLayout } from '../domain/device-config.js'
export type {
  CleanUnitRequest,
  CleanUnitResult,
  CleanUnitsEntry,
  CleanUnitsRequest,
  CleanUnitsResult,
} from './clean-units.js'

export const AGENT_RPC_VERSION = '1.8'
export const agentTopic = (host: string) => `cyborg.agent.${host}`

/** The fanout topic of agent telemetry: one {@link AgentTelemetry} per agent per period. */
export const TELEMETRY_TOPIC = 'cyborg.telemetry'

/** One driver's part of a telemetry message. */
export interface DriverTelemetry {
  /** The driver's name (`fake`, `nvidia-gpu`, …). */
  name: string
  /** False when its last discovery failed. */
  ok: boolean
  /** Devices it found in its last discovery (0 when it failed). */
  deviceCount: number
  /** How long its last discovery took, in milliseconds. */
  durationMs: number
  /** Cheap usage figures, for drivers that offer them (`stats()`); absent otherwise. */
  stats?: Record<string, number | string | boolean>
}

/**
 * The format version agents publish: 2 is 1 plus `periodMs` and `devices`. Fields are only ever
 * added, so a reader of 1 reads a 2 unchanged, and a reader of 2 reads a 1 as a host without samples.
 */
export const TELEMETRY_VERSION = 2

/** What an agent publishes on {@link TELEMETRY_TOPIC} every period. */
export interface AgentTelemetry {
  /** Format version of this message ({@link TELEMETRY_VERSION}). */
  version: 1 | 2
  host: string
  /** ISO-8601 UTC time the message was built. */
  time: string
  /** Devices found by the last discovery, all drivers together. */
  deviceCount: number
  drivers: DriverTelemetry[]
  /** (2) The agent's period in ms: receivers drop its samples after three periods of silence. */
  periodMs?: number
  /** (2) The latest sample of each device whose driver reads usage (`deviceStats()`), at most 256. */
  devices?: DeviceSample[]
}

/** What a receiver takes from a telemetry message: the sender, its period and its samples, cleaned. */
export interface TelemetryReading {
  host: string
  time?: string
  periodMs?: number
  devices: DeviceSample[]
}

/**
 * Reads a message of {@link TELEMETRY_TOPIC} (version 1 or later); undefined when it is not one.
 * Samples are cleaned (domain/device-telemetry.ts): a bad entry is dropped, never thrown.
 */
export function readAgentTelemetry(message: unknown): TelemetryReading | undefined {
  if (message === null || typeof message !== 'object') return undefined
  const m = message as Record<string, unknown>
  if (typeof m.version !== 'number' || m.version < 1) return undefined
  if (typeof m.host !== 'string' || m.host === '' || m.host.length > 255) return undefined
  const reading: TelemetryReading = { host: m.host, devices: cleanDeviceSamples(m.devices) }
  if (typeof m.time === 'string' && m.time.length <= 64) reading.time = m.time
  if (typeof m.periodMs === 'number' && Number.isFinite(m.periodMs) && m.periodMs > 0)
    reading.periodMs = m.periodMs
  return reading
}

/** The answer of `prepare` and `release`. */
export interface PciBindingResult {
  /** The PCI address, normalized (lower case). */
  address: string
  /** False when the device was already in the asked state: nothing was written. */
  changed: boolean
}

/** The answer of `createMdev` and `removeMdev`. */
export interface MdevResult {
  uuid: string
  /** False when the mdev already existed (create) or was already gone (remove). */
  changed: boolean
}

/** The answer of `install` and `programFpga`. */
export interface DeviceActionResult {
  ok: true
  /** The driver that owns the device. */
  driver: string
  /** The device's control path (its PF), `dddd:bb:dd.f`. */
  address: string
}

/** The answer of `abortClean`: given only once no clean of the unit runs on the host. */
export interface AbortCleanResult {
  /** True when a clean was running (or waiting) and was stopped; false when none ran. */
  aborted: boolean
}

/** What `configureDevice` is asked: the device, by its control path, and one change. */
export interface ConfigureDeviceRequest {
  /** The device's control path (its PF), as `install` takes it. */
  controlPath: PciAddress
  /** Exactly one of `sriovNumvfs` and `vgpuType`. */
  change: DeviceConfigChange
}

/** The answer of `configureDevice`. */
export interface ConfigureDeviceResult {
  /** The driver that owns the device. */
  driver: string
  /** The device's control path, `dddd:bb:dd.f`. */
  address: string
  /** False when the device already had the asked layout: nothing was changed. */
  changed: boolean
  /** The layout before the change, and now. */
  previous: DeviceLayout
  applied: DeviceLayout
  /**
   * The rediscovery run after the change: the conductor's answer to the new inventory (ingested
   * before this answer), or why it failed (the change stands; the next period reports again).
   */
  report: DriverAdminState['report']
}

export interface AgentRpc {
  /** Discover now and report; resolves with the conductor's answer. */
  discover(req: Record<string, never>): Promise<InventoryReportResult>
  /**
   * (1.1) Binds PCI function `address` (`0000:3b:00.1`) to vfio-pci through sysfs driver_override.
   * Idempotent. @throws InvalidInputError for a malformed address, NotFoundError for a missing device
   */
  prepare(req: { address: string }): Promise<PciBindingResult>
  /** (1.1) Undoes `prepare`: clears driver_override, unbinds from vfio-pci, reprobes. Idempotent. */
  release(req: { address: string }): Promise<PciBindingResult>
  /** (1.1) Creates mediated device `uuid` of `type` on PCI function `parent`. Idempotent. */
  createMdev(req: { parent: string; type: string; uuid: string }): Promise<MdevResult>
  /** (1.1) Removes mediated device `uuid`. Idempotent. */
  removeMdev(req: { uuid: string }): Promise<MdevResult>
  /**
   * (1.2) Runs the install step of the driver that reported the device with this control path
   * (seed 000 lifecycle); a driver without one succeeds at once.
   * @throws NotFoundError when no enabled driver reported it, DriverError (INSTALL_FAILED) when the step failed
   */
  install(req: { controlPath: PciAddress }): Promise<DeviceActionResult>
  /**
   * (1.2) Programs the FPGA at PCI function `address` with the bitstream at absolute path `imagePath`.
   * @throws InvalidInputError for a bad address or path, or a driver that cannot program;
   *   NotFoundError when no enabled driver owns the address; DriverError when the tool failed
   */
  programFpga(req: { address: string; imagePath: string }): Promise<DeviceActionResult>
  /**
   * (1.3) Programs the FPGA at `address` with a Glance image, by id (`accel:bitstream_id`) or by its
   * `accel:function_id` property: downloads it, verifies its hash, programs, deletes the file.
   * @throws InvalidInputError (IMAGE_HASH_MISMATCH) for an image whose bytes do not match Glance's
   *   hash; UnavailableError when this agent has no `[glance]`
   */
  programFpgaImage(req: {
    address: string
    image: { imageId?: string; functionId?: string }
  }): Promise<DeviceActionResult & { imageId: string }>
  /** (1.2) Enables or disables a driver of this agent, persistently, then rediscovers. @throws NotFoundError for an unknown driver */
  setDriverEnabled(req: { driver: string; enabled: boolean }): Promise<DriverAdminState>
  /**
   * (1.2) Merges `options` into the driver's overrides, rebuilds it through its factory, persists the
   * overrides and rediscovers. @throws NotFoundError for an unknown driver, InvalidInputError for options its factory refuses
   */
  updateDriverOptions(req: {
    driver: string
    options: Record<string, string>
  }): Promise<DriverAdminState>
  /** (1.4) Every configured driver of this agent, in configured order, with its last discovery. */
  listDrivers(req: Record<string, never>): Promise<{ host: string; drivers: AgentDriverInfo[] }>
  /**
   * (1.4) Registers a remote accelerator with this agent's `remote` driver (the generic driver's
   * remote backend): saves it in the agent's cache, rediscovers and reports; resolves once the
   * conductor has ingested the report. Idempotent for the same name and uuid.
   * @throws InvalidInputError for a bad name or uuid; NotFoundError (REMOTE_BACKEND_NOT_ENABLED)
   *   when the `remote` driver is not enabled here; ConflictError (ACCELERATOR_EXISTS) when this
   *   agent has the name or the uuid registered otherwise
   */
  registerRemote(req: {
    name: string
    uuid: string
  }): Promise<{ uuid: string; report: InventoryReportResult }>
  /**
   * (1.5) Cleans a released unit with its driver's clean and verify steps (docs/cleaning.md).
   * Idempotent; a request for a unit being cleaned joins that clean.
   * @throws NotFoundError (UNIT_NOT_ON_HOST); DriverError with a CLEAN_* or VERIFY_FAILED code
   */
  cleanUnit(req: CleanUnitRequest): Promise<CleanUnitResult>
  /**
   * (1.8) Cleans many units, each as `cleanUnit` would (side by side, idempotent, joining a running
   * clean of the same release, refused CLEAN_ABORTED after `abortClean`), and answers once all have
   * ended: `results[i]` is `units[i]`'s result or its error (src/rpc/clean-units.ts).
   * @throws InvalidInputError naming the field (`units`) when the request is not a list of at most
   *   MAX_CLEAN_UNITS units; a bad unit is its own entry
   */
  cleanUnits(req: CleanUnitsRequest): Promise<CleanUnitsResult>
  /**
   * (1.7) Stops every clean of the unit (an operator's force-in-service) and answers once the
   * driver's step has ended; later asks for the release `ticket` names are refused (CLEAN_ABORTED).
   * @throws UnavailableError (CLEAN_STILL_RUNNING) when a driver step did not end in time;
   *   InvalidInputError (CLEAN_TARGET_INVALID) naming the field
   */
  abortClean(req: CleanUnitRequest): Promise<AbortCleanResult>
  /**
   * (1.6) Re-partitions a device through the driver that reported it (its SR-IOV VF count, or its
   * vGPU type), then rediscovers and reports at once (docs/agent.md, "Configure"). Never under an
   * allocation: the conductor checks that before it asks.
   * @throws InvalidInputError naming the field (`controlPath`, `change`, `sriov_numvfs`,
   *   `vgpu_type`), CONFIGURE_UNSUPPORTED when the driver cannot make the change; NotFoundError
   *   (DEVICE_NOT_ON_HOST); DriverError CONFIGURE_FAILED with `details.restored`
   */
  configureDevice(req: ConfigureDeviceRequest): Promise<ConfigureDeviceResult>
}

export function createAgentClient(
  bus: MessageBus,
  host: string,
  options: RpcClientOptions = {},
): AgentRpc {
  return createRpcClient<AgentRpc & Record<string, never>>(
    bus,
    agentTopic(host),
    AGENT_RPC_VERSION,
    options,
  )
}

/** Every method of the contract; a `satisfies` check keeps it complete. */
const AGENT_METHODS = Object.keys({
  discover: true,
  prepare: true,
  release: true,
  createMdev: true,
  removeMdev: true,
  install: true,
  programFpga: true,
  programFpgaImage: true,
  setDriverEnabled: true,
  updateDriverOptions: true,
  listDrivers: true,
  registerRemote: true,
  cleanUnit: true,
  cleanUnits: true,
  abortClean: true,
  configureDevice: true,
} satisfies Record<keyof AgentRpc, true>) as (keyof AgentRpc)[]

/** Serves `impl` on the host's agent topic; only the contract's methods are reachable. */
export function serveAgent(bus: MessageBus, host: string, impl: AgentRpc, metrics?: Metrics) {
  const observer = metrics && { metrics, service: 'agent' }
  return serveRpc(
    bus,
    agentTopic(host),
    AGENT_RPC_VERSION,
    pickMethods(impl, AGENT_METHODS),
    observer,
  )
}
