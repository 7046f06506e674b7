/**
 * The agent's device operations (AgentRpc 1.1): bind a PCI function to vfio-pci and back, create
 * and remove mediated devices. Every read and write goes through the HostProbe, so tests run them
 * against a fake sysfs tree. Inputs are validated strictly before any path is built: an RPC can
 * only ever write the sysfs files named below. Each operation is idempotent, and operations run
 * one at a time (two binds of one device must not interleave their writes).
 *
 * Writes, in order:
 * - prepare:    `<dev>/driver_override` ← `vfio-pci`; `<dev>/driver/unbind` ← addr (if bound elsewhere);
 *               `/sys/bus/pci/drivers_probe` ← addr
 * - release:    `<dev>/driver_override` ← `\n` (clears it); `/sys/bus/pci/drivers/vfio-pci/unbind` ← addr
 *               (if bound to vfio-pci); `/sys/bus/pci/drivers_probe` ← addr
 * - createMdev: `<parent dev>/mdev_supported_types/<type>/create` ← uuid
 * - removeMdev: `/sys/bus/mdev/devices/<uuid>/remove` ← `1`
 *
 * where `<dev>` is `/sys/bus/pci/devices/<addr>`.
 */
import type { HostProbe } from '../drivers/driver.js'
import type { MdevResult, PciBindingResult } from '../rpc/agent-rpc.js'
import {
  ConflictError,
  InvalidInputError,
  InvalidStateError,
  NotFoundError,
} from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { isCanonicalUuid } from '../domain/ids.js'

export const PCI_DEVICES = '/sys/bus/pci/devices'
export const PCI_DRIVERS_PROBE = '/sys/bus/pci/drivers_probe'
export const VFIO_PCI_DRIVER = '/sys/bus/pci/drivers/vfio-pci'
export const MDEV_DEVICES = '/sys/bus/mdev/devices'

const PCI_ADDRESS = /^[0-9a-f]{4,5}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$/
/** mdev type names as the kernel makes them (`nvidia-35`, `i915-GVTg_V5_4`): no `/`, no `..`. */
const MDEV_TYPE = /^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}$/

export interface DeviceOps {
  prepare(req: { address: string }): Promise<PciBindingResult>
  release(req: { address: string }): Promise<PciBindingResult>
  createMdev(req: { parent: string; type: string; uuid: string }): Promise<MdevResult>
  removeMdev(req: { uuid: string }): Promise<MdevResult>
}

const field = (req: unknown, name: string): unknown =>
  req !== null && typeof req === 'object' ? (req as Record<string, unknown>)[name] : undefined

/** A PCI address in sysfs form (`0000:3b:00.1`), lower-cased. @throws InvalidInputError */
export function parsePciAddress(value: unknown, name = 'address'): string {
  const address = typeof value === 'string' ? value.toLowerCase() : ''
  if (!PCI_ADDRESS.test(address)) {
    throw new InvalidInputError(
      `${name} must be a PCI address like 0000:3b:00.1, not ${JSON.stringify(value)}`,
      {
        code: 'PCI_ADDRESS_INVALID',
        details: { field: name },
      },
    )
  }
  return address
}

/** A uuid in canonical lower-case form. @throws InvalidInputError */
export function parseUuid(value: unknown, name = 'uuid'): string {
  const uuid = typeof value === 'string' ? value.toLowerCase() : ''
  if (!isCanonicalUuid(uuid)) {
    throw new InvalidInputError(`${name} must be a uuid, not ${JSON.stringify(value)}`, {
      code: 'UUID_INVALID',
      details: { field: name },
    })
  }
  return uuid
}

/** An mdev type name: one path segment, never `.`/`..`. @throws InvalidInputError */
export function parseMdevType(value: unknown, name = 'type'): string {
  if (typeof value !== 'string' || !MDEV_TYPE.test(value) || value.includes('..')) {
    throw new InvalidInputError(
      `${name} must be an mdev type name like nvidia-35, not ${JSON.stringify(value)}`,
      {
        code: 'MDEV_TYPE_INVALID',
        details: { field: name },
      },
    )
  }
  return value
}

/** Creates the operations over `host`; without a host every operation fails with AGENT_NO_HOST_PROBE. */
export function createDeviceOps(deps: { host: HostProbe | undefined; log: Logger }): DeviceOps {
  const { host, log } = deps
  let queue: Promise<unknown> = Promise.resolve()
  const serialized = <T>(fn: (probe: HostProbe) => Promise<T>): Promise<T> => {
    const run = queue.then(() => {
      if (!host)
        throw new InvalidStateError('this agent has no host probe', { code: 'AGENT_NO_HOST_PROBE' })
      return fn(host)
    })
    queue = run.catch(() => {})
    return run
  }

  const pciDevice = async (probe: HostProbe, address: string): Promise<string> => {
    const dev = `${PCI_DEVICES}/${address}`
    if (!(await probe.exists(dev))) {
      throw new NotFoundError(`no PCI device ${address} on this host`, {
        code: 'PCI_DEVICE_NOT_FOUND',
        details: { address },
      })
    }
    return dev
  }

  /** driver_override's value; the kernel shows an unset one as `(null)`. */
  const override = async (probe: HostProbe, dev: string): Promise<string> => {
    const path = `${dev}/driver_override`
    if (!(await probe.exists(path))) return ''
    const value = (await probe.readFile(path)).trim()
    return value === '(null)' ? '' : value
  }

  const boundToVfio = (probe: HostProbe, address: string) =>
    probe.exists(`${VFIO_PCI_DRIVER}/${address}`)

  return {
    async prepare(req) {
      const address = parsePciAddress(field(req, 'address'))
      return serialized(async (probe) => {
        const dev = await pciDevice(probe, address)
        const overridden = (await override(probe, dev)) === 'vfio-pci'
        const bound = await boundToVfio(probe, address)
        if (overridden && bound) return { address, changed: false }
        if (!overridden) await probe.writeFile(`${dev}/driver_override`, 'vfio-pci')
        if (!bound && (await probe.exists(`${dev}/driver`)))
          await probe.writeFile(`${dev}/driver/unbind`, address)
        if (!bound) await probe.writeFile(PCI_DRIVERS_PROBE, address)
        log.info({ address }, 'PCI function bound to vfio-pci')
        return { address, changed: true }
      })
    },
    async release(req) {
      const address = parsePciAddress(field(req, 'address'))
      return serialized(async (probe) => {
        const dev = await pciDevice(probe, address)
        const overridden = (await override(probe, dev)) !== ''
        const bound = await boundToVfio(probe, address)
        if (!overridden && !bound) return { address, changed: false }
        if (overridden) await probe.writeFile(`${dev}/driver_override`, '\n')
        if (bound) await probe.writeFile(`${VFIO_PCI_DRIVER}/unbind`, address)
        await probe.writeFile(PCI_DRIVERS_PROBE, address)
        log.info({ address }, 'PCI function released from vfio-pci')
        return { address, changed: true }
      })
    },
    async createMdev(req) {
      const parent = parsePciAddress(field(req, 'parent'), 'parent')
      const type = parseMdevType(field(req, 'type'))
      const uuid = parseUuid(field(req, 'uuid'))
      return serialized(async (probe) => {
        const dev = await pciDevice(probe, parent)
        const typeDir = `${dev}/mdev_supported_types/${type}`
        if (!(await probe.exists(typeDir))) {
          throw new NotFoundError(`PCI device ${parent} offers no mdev type ${type}`, {
            code: 'MDEV_TYPE_NOT_FOUND',
            details: { parent, type },
          })
        }
        if (await probe.exists(`${typeDir}/devices/${uuid}`)) return { uuid, changed: false }
        if (await probe.exists(`${MDEV_DEVICES}/${uuid}`)) {
          throw new ConflictError(`mdev ${uuid} already exists with another parent or type`, {
            code: 'MDEV_EXISTS',
            details: { uuid },
          })
        }
        const available = `${typeDir}/available_instances`
        if (
          (await probe.exists(available)) &&
          Number((await probe.readFile(available)).trim()) === 0
        ) {
          throw new ConflictError(`no instance of mdev type ${type} left on ${parent}`, {
            code: 'MDEV_EXHAUSTED',
            details: { parent, type },
          })
        }
        await probe.writeFile(`${typeDir}/create`, uuid)
        log.info({ parent, type, uuid }, 'mdev created')
        return { uuid, changed: true }
      })
    },
    async removeMdev(req) {
      const uuid = parseUuid(field(req, 'uuid'))
      return serialized(async (probe) => {
        if (!(await probe.exists(`${MDEV_DEVICES}/${uuid}`))) return { uuid, changed: false }
        await probe.writeFile(`${MDEV_DEVICES}/${uuid}/remove`, '1')
        log.info({ uuid }, 'mdev removed')
        return { uuid, changed: true }
      })
    },
  }
}
