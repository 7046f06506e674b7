/**
 * Mediated devices for fixture hosts (fixture-host-probe.ts), opt-in: `withMdevSimulation(probe)`
 * makes the writes that create and remove an mdev do what the kernel does (Linux
 * Documentation/driver-api/vfio-mediated-device.rst), so that the agent, the driver's clean and a
 * stand-in for Nova's compute host see each other's mdevs:
 *
 * - a uuid written to `<parent>/mdev_supported_types/<type>/create` makes
 *   `/sys/bus/mdev/devices/<uuid>` (with its `remove`) and `<type>/devices/<uuid>` appear, and
 *   `available_instances` drop by one; a uuid already in use is refused with EEXIST, a type with
 *   no instance left with EUSERS, anything but a uuid with EINVAL;
 * - `1` written to `/sys/bus/mdev/devices/<uuid>/remove` makes the mdev go (a recorded one too)
 *   and gives its instance back; a missing mdev is ENOENT.
 *
 * Every write the simulation accepts goes through to the wrapped probe (its `writes` record them);
 * a refused one never reaches it. Every other path is left to the wrapped probe.
 */
import path from 'node:path'
import type { HostProbe } from '../driver.js'
import { DriverError } from '../../domain/errors.js'
import { isCanonicalUuid } from '../../domain/ids.js'
import { PCI_DEVICES_ROOT } from '../pci/pci-sysfs.js'

/** Where the kernel lists mediated devices. */
const MDEV_BUS = '/sys/bus/mdev/devices'
const CREATE = /^(\/sys\/bus\/pci\/devices\/[^/]+\/mdev_supported_types\/[^/]+)\/create$/
const DEVICES =
  /^(\/sys\/bus\/pci\/devices\/[^/]+\/mdev_supported_types\/[^/]+)\/devices(?:\/([^/]+))?$/
const AVAILABLE =
  /^(\/sys\/bus\/pci\/devices\/[^/]+\/mdev_supported_types\/[^/]+)\/available_instances$/
const ON_BUS = /^\/sys\/bus\/mdev\/devices\/([^/]+)(?:\/(.+))?$/

const norm = (p: string): string => path.posix.normalize(p).replace(/(.)\/$/, '$1')

const refused = (hostPath: string, errno: string): DriverError =>
  new DriverError(`cannot write ${hostPath}: ${errno}`, {
    code: errno === 'ENOENT' ? 'HOST_PATH_NOT_FOUND' : 'HOST_IO_ERROR',
    details: { path: hostPath },
  })

/** `probe` with mdev creation and removal simulated over it. */
export function withMdevSimulation<T extends HostProbe>(probe: T): T {
  /** uuid → its type directory: mdevs made by writes. */
  const created = new Map<string, string>()
  /** uuid → its type directory: recorded mdevs removed by writes. */
  const removed = new Map<string, string>()

  const present = async (uuid: string): Promise<boolean> =>
    created.has(uuid) || (!removed.has(uuid) && (await probe.exists(`${MDEV_BUS}/${uuid}`)))
  const countIn = (map: Map<string, string>, typeDir: string): number =>
    [...map.values()].filter((t) => t === typeDir).length
  /** The type directory of a recorded mdev, found under the recorded parents. */
  const recordedTypeDir = async (uuid: string): Promise<string> => {
    for (const fn of await probe.readDir(PCI_DEVICES_ROOT).catch(() => [])) {
      const types = `${PCI_DEVICES_ROOT}/${fn}/mdev_supported_types`
      for (const type of await probe.readDir(types).catch(() => []))
        if (await probe.exists(`${types}/${type}/devices/${uuid}`)) return `${types}/${type}`
    }
    return ''
  }
  const available = async (typeDir: string): Promise<number> => {
    const recorded = Number((await probe.readFile(`${typeDir}/available_instances`)).trim())
    return recorded + countIn(removed, typeDir) - countIn(created, typeDir)
  }

  return {
    ...probe,
    async exists(hostPath) {
      const p = norm(hostPath)
      const bus = ON_BUS.exec(p)
      if (bus) {
        if (!(await present(bus[1]!))) return false
        if (created.has(bus[1]!)) return bus[2] === undefined || bus[2] === 'remove'
      }
      const listed = DEVICES.exec(p)
      if (listed?.[2] !== undefined) {
        if (created.get(listed[2]) === listed[1]) return true
        if (removed.has(listed[2])) return false
      }
      return probe.exists(hostPath)
    },
    async readDir(hostPath) {
      const p = norm(hostPath)
      const listed = DEVICES.exec(p)
      if (p !== MDEV_BUS && (listed === null || listed[2] !== undefined))
        return probe.readDir(hostPath)
      const typeDir = listed?.[1]
      const recorded = await probe.readDir(hostPath).catch((err: unknown) => {
        if (created.size === 0) throw err
        return []
      })
      const mine = [...created].filter(([, t]) => typeDir === undefined || t === typeDir)
      const kept = recorded.filter((u) => !removed.has(u) && !created.has(u))
      return [...kept, ...mine.map(([u]) => u)].sort()
    },
    async readFile(hostPath) {
      const p = norm(hostPath)
      const count = AVAILABLE.exec(p)
      if (count) return `${await available(count[1]!)}\n`
      const bus = ON_BUS.exec(p)
      if (bus && !(await present(bus[1]!))) throw refused(hostPath, 'ENOENT')
      return probe.readFile(hostPath)
    },
    async writeFile(hostPath, data) {
      const p = norm(hostPath)
      const create = CREATE.exec(p)
      const bus = ON_BUS.exec(p)
      if (create) {
        const typeDir = create[1]!
        const uuid = data.trim()
        if (!isCanonicalUuid(uuid)) throw refused(hostPath, 'EINVAL')
        if (await present(uuid)) throw refused(hostPath, 'EEXIST')
        if ((await available(typeDir)) <= 0) throw refused(hostPath, 'EUSERS')
        await probe.writeFile(hostPath, data)
        if (removed.get(uuid) === typeDir) removed.delete(uuid)
        else created.set(uuid, typeDir)
      } else if (bus?.[2] === 'remove') {
        const uuid = bus[1]!
        if (!(await present(uuid))) throw refused(hostPath, 'ENOENT')
        await probe.writeFile(hostPath, data)
        if (created.has(uuid)) created.delete(uuid)
        else removed.set(uuid, await recordedTypeDir(uuid))
      } else await probe.writeFile(hostPath, data)
    },
  }
}
