/**
 * The storm's hardware: one host with DEVICES devices, each one deployable of HANDLES TEST_PCI
 * handles (no agent preparation needed), reported to a conductor as an agent would, active at
 * once. Shared by the embedded and the multi-process boot storms.
 */
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'

export const STORM_HOST = 'storm-host'
export const STORM_PROFILE = 'storm-fpga'

/** The storm host's devices. TEST_PCI handles need no agent; PCI ones have the host's agent prepare them (vfio-pci). */
export function stormDevices(
  devices: number,
  handles: number,
  handleType: 'TEST_PCI' | 'PCI' = 'TEST_PCI',
): DiscoveredDevice[] {
  return Array.from({ length: devices }, (_, d) => {
    const bus = (0x10 + d).toString(16).padStart(2, '0')
    return {
      type: 'FPGA',
      vendor: 'abcd',
      model: 'storm',
      stdBoardInfo: null,
      vendorBoardInfo: null,
      controlPath: { type: 'PCI', info: { domain: '0000', bus, device: '00', function: '0' } },
      deployables: [
        {
          name: `${STORM_HOST}_0000:${bus}:00.0`,
          numAccelerators: handles,
          driverName: 'fake',
          attributes: [
            { key: 'rc', value: 'FPGA' },
            { key: 'trait0', value: 'CUSTOM_STORM' },
          ],
          attachHandles: Array.from({ length: handles }, (_, h) => ({
            type: handleType,
            info: { domain: '0000', bus, device: String(h >> 3), function: String(h & 7) },
          })),
        },
      ],
    }
  })
}

/** Reports the storm host and creates its device profile (one FPGA with the storm trait). */
export async function seedStorm(
  conductor: ConductorRpc,
  devices = 4,
  handles = 64,
  handleType: 'TEST_PCI' | 'PCI' = 'TEST_PCI',
): Promise<void> {
  const list = stormDevices(devices, handles, handleType)
  await conductor.reportInventory({
    host: STORM_HOST,
    hash: inventoryHash(list),
    devices: list,
    autoActivate: true,
  })
  await conductor
    .createDeviceProfile({
      name: STORM_PROFILE,
      description: null,
      groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_STORM': 'required' }],
    })
    .catch((err: unknown) => {
      if ((err as { code?: string }).code !== 'DEVICE_PROFILE_EXISTS') throw err
    })
}
