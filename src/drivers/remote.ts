/**
 * The generic driver's remote backend (seed 004; seed 003 `POST /accelerators`): accelerators that
 * no agent can discover, e.g. the cards of a standalone accelerator rack reached over the network.
 * An operator registers one through the API; the conductor hands the registration to an agent that
 * runs this driver (AgentRpc 1.4 `registerRemote`), the agent keeps it in its local cache and gives
 * the list to the driver before every discovery (`setRemoteAccelerators`, an optional capability of
 * the AcceleratorDriver port that only this driver has). The driver then reports one
 * device per registration. It never touches the host: its devices come from the agent, not the OS.
 *
 * Each device is of type REMOTE, with the control path `{type: 'REMOTE', info: {uuid}}` (its canonical
 * JSON cannot collide with a PCI address on the same host), one deployable named as registered, with
 * the registered uuid as its uuid hint, one accelerator, no attach handle (nothing to pass through
 * to a VM on this host), resource class `CUSTOM_REMOTE_ACCELERATOR` and trait `OWNER_CYBORG`.
 */
import {
  isRemoteAccelerator,
  REMOTE_DRIVER,
  type AcceleratorDriver,
  type DriverDeps,
  type RemoteAccelerator,
} from './driver.js'
import { AppError, ConfigError } from '../domain/errors.js'
import { DeviceType, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import { OWNER_CYBORG, rcAndTraits } from './traits.js'

/** The Placement resource class of a remote accelerator. */
export const REMOTE_RESOURCE_CLASS = 'CUSTOM_REMOTE_ACCELERATOR'
/** Vendor and model of a remote device: nothing on this host can tell them. */
export const REMOTE_VENDOR = 'remote'
export const REMOTE_MODEL = 'remote accelerator'

/** The remote driver: an AcceleratorDriver whose devices are set from outside. */
export interface RemoteDriver extends AcceleratorDriver {
  /** Replaces the registrations that the next `discover()` reports (the port's optional capability, here required). */
  setRemoteAccelerators(accelerators: readonly RemoteAccelerator[]): void
}

/** True for a driver with the remote-registration capability (the remote driver, whatever name it was enabled under). */
export function isRemoteDriver(driver: AcceleratorDriver): driver is RemoteDriver {
  return typeof driver.setRemoteAccelerators === 'function'
}

/**
 * Parses the optional driver option `accelerators`: a JSON array of `{name, uuid}` that the driver
 * reports before the agent gives it any (fixtures and tests use it; the agent's registrations replace it).
 * @throws ConfigError naming the option when it is not such an array
 */
export function parseRemoteAccelerators(text: string | undefined): RemoteAccelerator[] {
  if (text === undefined || text.trim() === '') return []
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw optionError(`is not JSON (${(err as Error).message})`, text)
  }
  if (!Array.isArray(value)) throw optionError('must be a JSON array of {"name", "uuid"}', text)
  return value.map((entry) => {
    if (!isRemoteAccelerator(entry))
      throw optionError('each entry needs a non-empty "name" and a lower-case "uuid"', text)
    return { name: entry.name, uuid: entry.uuid }
  })
}

const optionError = (problem: string, value: string) =>
  new ConfigError(`remote driver option accelerators ${problem}`, {
    code: 'INVALID_DRIVER_OPTION',
    details: { driver: REMOTE_DRIVER, option: 'accelerators', value },
  })

/** The device reported for one registration. */
export function remoteDevice(accelerator: RemoteAccelerator): DiscoveredDevice {
  return {
    type: DeviceType.REMOTE,
    vendor: REMOTE_VENDOR,
    model: REMOTE_MODEL,
    stdBoardInfo: null,
    vendorBoardInfo: null,
    controlPath: { type: 'REMOTE', info: { uuid: accelerator.uuid } },
    deployables: [
      {
        name: accelerator.name,
        uuid: accelerator.uuid,
        numAccelerators: 1,
        driverName: REMOTE_DRIVER,
        attributes: rcAndTraits(REMOTE_RESOURCE_CLASS, [OWNER_CYBORG]),
        attachHandles: [],
      },
    ],
  }
}

/** Creates the remote driver; `options.accelerators` (JSON) seeds its registrations. `deps` is unused: no host access. */
export function createRemoteDriver(
  _deps: DriverDeps,
  options: Record<string, string> = {},
): RemoteDriver {
  let accelerators = parseRemoteAccelerators(options.accelerators)
  return {
    name: REMOTE_DRIVER,
    deviceType: DeviceType.REMOTE,
    setRemoteAccelerators(list) {
      accelerators = list.map(({ name, uuid }) => ({ name, uuid }))
    },
    async discover(opts = {}) {
      if (opts.signal?.aborted) {
        throw new AppError('remote discovery aborted', {
          code: 'ABORTED',
          cause: opts.signal.reason,
        })
      }
      // Sorted by uuid, fresh objects every time: stable across runs, safe to mutate.
      return [...accelerators]
        .sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0))
        .map(remoteDevice)
    },
  }
}
