/**
 * The device lifecycle actions of driver administration (driver-admin.ts, AgentRpc 1.2):
 * `install` runs the install step of the driver that reported the device; `programFpga` runs the
 * FPGA driver's `program` on the device or one of its PCI functions. Devices are looked up in what
 * each enabled driver found in its last successful discovery (`owner`).
 */
import type { AcceleratorDriver } from '../drivers/driver.js'
import { DriverError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import { controlPathAddress, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { DeviceActionResult } from '../rpc/agent-rpc.js'
import { parseControlPath, parseImagePath, parseProgramAddress } from './driver-admin-input.js'
import { failure } from './driver-settings.js'

export interface DeviceActionDeps {
  /** The enabled driver that found a device matching `match`, that device and its address. */
  owner(
    match: (d: DiscoveredDevice) => boolean,
  ): Promise<{ driver: AcceleratorDriver; device: DiscoveredDevice; address: string } | undefined>
  log: Logger
}

/** `install({ controlPath })`. @throws NotFoundError DEVICE_NOT_ON_HOST; DriverError INSTALL_FAILED */
export async function installDevice(
  deps: DeviceActionDeps,
  req: unknown,
): Promise<DeviceActionResult> {
  const address = parseControlPath(req)
  const hit = await deps.owner((d) => controlPathAddress(d.controlPath) === address)
  if (!hit) {
    throw new NotFoundError(`no enabled driver on this host reported a device at ${address}`, {
      code: 'DEVICE_NOT_ON_HOST',
      details: { address },
    })
  }
  const { driver, device } = hit
  try {
    await driver.install?.(device)
  } catch (err) {
    throw new DriverError(
      `driver ${driver.name} could not install device ${address}: ${failure(err).message}`,
      {
        code: 'INSTALL_FAILED',
        details: { driver: driver.name, address, cause: failure(err).code },
        cause: err,
      },
    )
  }
  deps.log.info(
    { driver: driver.name, address, step: driver.install ? 'install' : 'none' },
    'device installed',
  )
  return { ok: true, driver: driver.name, address }
}

/**
 * `programFpga({ address, imagePath })`, the address being the device's or one of its PCI functions'.
 * @throws NotFoundError DEVICE_NOT_ON_HOST; InvalidInputError PROGRAM_NOT_SUPPORTED
 */
export async function programFpgaDevice(
  deps: DeviceActionDeps,
  req: unknown,
): Promise<DeviceActionResult> {
  const address = parseProgramAddress(req)
  const imagePath = parseImagePath(req)
  const hit = await deps.owner(
    (d) =>
      controlPathAddress(d.controlPath) === address ||
      d.deployables.some((dep) => dep.attachHandles.some((h) => handleAddress(h.info) === address)),
  )
  if (!hit) {
    throw new NotFoundError(`no enabled driver on this host owns PCI function ${address}`, {
      code: 'DEVICE_NOT_ON_HOST',
      details: { address },
    })
  }
  const { driver } = hit
  if (!driver.program) {
    throw new InvalidInputError(`driver ${driver.name} cannot program`, {
      code: 'PROGRAM_NOT_SUPPORTED',
      details: { driver: driver.name, address },
    })
  }
  await driver.program(hit.address, imagePath)
  deps.log.info({ driver: driver.name, address: hit.address, imagePath }, 'FPGA programmed')
  return { ok: true, driver: driver.name, address: hit.address }
}

/** The `dddd:bb:dd.f` of a PCI attach handle's info, or undefined for another kind of handle. */
function handleAddress(info: Record<string, string>): string | undefined {
  const { domain, bus, device, function: fn } = info
  if (domain === undefined || bus === undefined || device === undefined || fn === undefined)
    return undefined
  return controlPathAddress({
    type: 'PCI',
    info: { domain, bus, device, function: fn },
  }).toLowerCase()
}
