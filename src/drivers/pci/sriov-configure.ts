/**
 * Re-partitioning an SR-IOV PF: the `configure` of intel-qat and intel-nic, which sets how many VFs
 * the PF has through sysfs (Linux Documentation/ABI/testing/sysfs-bus-pci: `sriov_totalvfs`,
 * `sriov_numvfs`; Documentation/PCI/pci-iov-howto.rst).
 *
 * The kernel refuses to go from one non-zero count to another (EBUSY), so a new count is written
 * as `0`, then the count; `sriov_numvfs` is then read back. When the host refuses on the way, the
 * previous count is written back (`0`, then the count) and read back: DriverError
 * `CONFIGURE_FAILED` says whether that worked (`details.restored`). The count lives in the kernel:
 * it outlives an agent restart, not a host reboot.
 */
import type { AcceleratorDriver, ConfigureOutcome, HostProbe } from '../driver.js'
import { AppError, DriverError, InvalidInputError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { configureUnsupported } from '../../domain/device-config.js'
import type { DiscoveredDevice } from '../../domain/inventory/inventory.js'
import { formatPciAddress, PCI_DEVICES_ROOT, readOptional } from './pci-sysfs.js'

/** A sysfs count (`16\n`); undefined if the text is not one. */
function parseSysfsCount(text: string | undefined): number | undefined {
  const m = text === undefined ? null : /^\s*(\d{1,5})\s*$/.exec(text)
  return m ? Number(m[1]) : undefined
}

/** The PF's canonical address (the device's control path). */
function pfAddress(driver: string, device: DiscoveredDevice): string {
  if (device.controlPath.type !== 'PCI')
    throw new InvalidInputError(`driver ${driver}: the device has no PCI control path`, {
      code: 'CONFIGURE_UNSUPPORTED',
      details: { field: 'change', driver },
    })
  return formatPciAddress(device.controlPath.info)
}

/**
 * Writes `to` into `<dir>/sriov_numvfs` (after a `0` unless `from` is known to be 0) and reads it
 * back. @throws the host's error, or DriverError when the read-back differs
 */
async function setNumvfs(host: HostProbe, dir: string, from: number | undefined, to: number) {
  const file = `${dir}/sriov_numvfs`
  if (from !== 0) await host.writeFile(file, '0')
  if (to !== 0) await host.writeFile(file, String(to))
  const now = parseSysfsCount(await host.readFile(file))
  if (now !== to)
    throw new DriverError(`${file} reads ${now ?? 'garbage'} after writing ${to}`, {
      code: 'SYSFS_READBACK_MISMATCH',
      details: { path: file, expected: to, read: now ?? null },
    })
}

/**
 * The `configure` of an SR-IOV driver named `driver`, over `host`: supports `sriovNumvfs` only.
 * A device whose PF has no `sriov_totalvfs` (SR-IOV off in the BIOS, or not capable) is refused.
 */
export function createSriovConfigure(
  host: HostProbe,
  driver: string,
): NonNullable<AcceleratorDriver['configure']> {
  return async (device, change, options = {}): Promise<ConfigureOutcome> => {
    const wanted = change.sriovNumvfs
    const address = pfAddress(driver, device)
    if (change.vgpuType !== undefined)
      throw configureUnsupported(driver, { vgpuType: change.vgpuType }, address)
    if (wanted === undefined) throw configureUnsupported(driver, {}, address)
    const dir = `${PCI_DEVICES_ROOT}/${address}`
    const [totalText, currentText] = await Promise.all([
      readOptional(host, `${dir}/sriov_totalvfs`),
      readOptional(host, `${dir}/sriov_numvfs`),
    ])
    const total = parseSysfsCount(totalText)
    if (total === undefined)
      throw new InvalidInputError(`${address} has no SR-IOV (no readable sriov_totalvfs)`, {
        code: 'SRIOV_UNSUPPORTED',
        details: { field: 'sriov_numvfs', driver, address },
      })
    if (!Number.isInteger(wanted) || wanted < 0 || wanted > total)
      throw new InvalidInputError(
        `sriov_numvfs must be from 0 to ${total} (sriov_totalvfs of ${address}), not ${wanted}`,
        {
          code: 'SRIOV_NUMVFS_OUT_OF_RANGE',
          details: { field: 'sriov_numvfs', driver, address, max: total },
        },
      )
    const current = parseSysfsCount(currentText)
    if (current === undefined)
      throw new DriverError(`${dir}/sriov_numvfs cannot be read`, {
        code: 'SYSFS_UNREADABLE',
        details: { path: `${dir}/sriov_numvfs`, driver, address },
      })
    const previous = { sriovNumvfs: current }
    if (current === wanted) return { changed: false, previous, applied: previous }
    if (options.signal?.aborted)
      throw new AppError(`${driver} configure of ${address} aborted`, {
        code: 'ABORTED',
        cause: options.signal.reason,
      })
    try {
      await setNumvfs(host, dir, current, wanted)
    } catch (err) {
      // The state is unknown here: write 0 first whatever it was, then the previous count.
      const restored = await setNumvfs(host, dir, undefined, current).then(
        () => true,
        () => false,
      )
      const after = restored ? `${current} put back` : `putting ${current} back failed too`
      throw new DriverError(
        `${driver} could not change ${address} from ${current} to ${wanted} VFs (${errorMessage(err)}); ${after}`,
        {
          code: 'CONFIGURE_FAILED',
          details: {
            field: 'sriov_numvfs',
            driver,
            address,
            previous: current,
            requested: wanted,
            restored,
          },
          cause: err,
        },
      )
    }
    return { changed: true, previous, applied: { sriovNumvfs: wanted } }
  }
}
