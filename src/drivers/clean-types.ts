/**
 * The types of the optional `clean` / `verify` driver capabilities (docs/cleaning.md), in a leaf
 * file so that driver.ts and clean.ts (which runs them) both import it without a cycle.
 */
import type { AttachType, ControlPath, DiscoveredDevice } from '../domain/inventory/inventory.js'

/** What a driver is asked to clean: one unit (an attach handle) of one device. */
export interface CleanTarget {
  /** The device's control path (a PCI function: the GPU's PF, the FPGA card, the NVMe controller). */
  controlPath: ControlPath
  /**
   * The unit that was allocated: its attach handle as discovered (`PCI` with the function's
   * `domain`/`bus`/`device`/`function`; `MDEV` with `asked_type` and the parent function).
   */
  handle: { type: AttachType; info: Readonly<Record<string, string>> }
  /** The mdev the tenant had (`MDEV` handles): its uuid, the ARQ's `attach_handle_uuid` (docs/nova.md). */
  mdevUuid?: string
  /** The device as the driver last discovered it, when the caller has it. */
  device?: DiscoveredDevice
}

/** Per-call options of `clean` and `verify`. */
export interface CleanCallOptions {
  /** Aborts the step (time limit or shutdown); a driver checks it between host calls. */
  signal?: AbortSignal
}

/** Method names drivers report (`CleanResult.method`). */
export const CleanMethod = {
  /** Function-level reset through sysfs `reset`. */
  PCI_FLR: 'pci-flr',
  /** `nvidia-smi --gpu-reset`. */
  NVIDIA_GPU_RESET: 'nvidia-smi-gpu-reset',
  /** The vGPU's mdev removed and created again. */
  MDEV_RECREATE: 'mdev-recreate',
  /** `nvme sanitize` (block erase, crypto erase or overwrite). */
  NVME_SANITIZE: 'nvme-sanitize',
  /** `nvme format --ses` (user data erase or crypto erase) of every namespace. */
  NVME_FORMAT_SES: 'nvme-format-ses',
  /** The operator's blank image loaded with the programming tool. */
  FPGA_BLANK_IMAGE: 'fpga-blank-image',
  /** The fake driver's simulated clean. */
  FAKE: 'fake',
  /** Not cleaned: `clean = none`, the operator's recorded choice. */
  NONE: 'none',
} as const
export type CleanMethod = (typeof CleanMethod)[keyof typeof CleanMethod]

/** What a driver's `clean` did. */
export interface CleanResult {
  /** How the unit was cleaned (a {@link CleanMethod}). */
  method: CleanMethod
  /** What was written and what the tools printed, in order; the caller keeps a digest of it. */
  evidence: string
  /**
   * What the driver read before cleaning (ids, driver binding, the controller), handed back to its
   * `verify` so that it compares the unit after the clean with the unit before. Driver-private.
   */
  state?: Readonly<Record<string, string>>
}

/** What a driver's `verify` checked. */
export interface VerifyResult {
  /** What was read back. */
  evidence: string
}

/** `[<driver>] clean`: `auto` cleans with the driver's method, `none` skips it (operator's choice). */
export type CleanPolicy = 'auto' | 'none'

/** A driver's parsed clean options. */
export interface CleanSettings {
  /** @default 'auto' */
  policy: CleanPolicy
  /** The time `clean` and `verify` together may take. */
  timeoutMs: number
}
