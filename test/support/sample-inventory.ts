/**
 * Small, deterministic inventories for tests: `sampleDevice(host, n)` is the n-th PCI device of a
 * host (GPUs and FPGAs alternate, two vendors), with one deployable, two attributes and two handles.
 */
import {
  canonicalJson,
  type DiscoveredDevice,
  type InventorySnapshot,
} from '../../src/domain/inventory/inventory.js'

export interface SampleOptions {
  /** @default 2 */
  handles?: number
  /** @default 2 (or 1 per handle when handles is 1) */
  numAccelerators?: number
  /** TEST_PCI handles bind without an agent to prepare them. @default 'PCI' */
  attachType?: 'PCI' | 'TEST_PCI'
}

/** The n-th (0-based) sample device of `host`. */
export function sampleDevice(
  host: string,
  n: number,
  options: SampleOptions = {},
): DiscoveredDevice {
  const { handles = 2, numAccelerators = handles, attachType = 'PCI' } = options
  const bus = (0x10 + n).toString(16).padStart(2, '0')
  const gpu = n % 2 === 0
  return {
    type: gpu ? 'GPU' : 'FPGA',
    vendor: n % 3 === 0 ? '10de' : '8086',
    model: gpu ? 'A100' : 'Arria10',
    stdBoardInfo: { class: gpu ? '0302' : '1200' },
    vendorBoardInfo: null,
    controlPath: { type: 'PCI', info: { domain: '0000', bus, device: '00', function: '0' } },
    deployables: [
      {
        name: `${host}_0000:${bus}:00.0`,
        numAccelerators,
        driverName: gpu ? 'nvidia-gpu' : 'intel-fpga',
        attributes: [
          { key: 'rc', value: gpu ? 'PGPU' : 'FPGA' },
          { key: 'trait0', value: gpu ? 'CUSTOM_GPU_NVIDIA' : 'CUSTOM_FPGA_INTEL' },
        ],
        attachHandles: Array.from({ length: handles }, (_, i) => ({
          type: attachType,
          info: { domain: '0000', bus, device: '00', function: String(i) },
        })),
      },
    ],
  }
}

/** A snapshot of `count` sample devices (hash = their canonical JSON's length, enough for tests). */
export function sampleSnapshot(
  host: string,
  count: number,
  options: SampleOptions = {},
): InventorySnapshot {
  const devices = Array.from({ length: count }, (_, n) => sampleDevice(host, n, options))
  return { host, hash: `len-${canonicalJson(devices).length}`, devices }
}
