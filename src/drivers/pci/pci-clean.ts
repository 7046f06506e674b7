/**
 * Cleaning a PCI function by a function-level reset through sysfs, shared by the pci, intel-qat,
 * intel-nic and nvidia-gpu (no vendor tool) drivers (docs/cleaning.md).
 *
 * The kernel's `reset` attribute (Linux Documentation/ABI/testing/sysfs-bus-pci,
 * /sys/bus/pci/devices/.../reset): writing `1` resets the function with the first method that works
 * (device-specific, FLR, AF FLR, PM, bus); the file exists only when the function has at least one
 * reset method, so its absence is the kernel saying "cannot". `reset_method` (kernel 5.15+) lists
 * the methods and goes into the evidence when present.
 *
 * Verify: the function is still there, its `vendor` and `device` read back unchanged, and a function
 * that was bound to vfio-pci still is (its entry under /sys/bus/pci/drivers/vfio-pci/, read through
 * since HostProbe has no readlink).
 */
import type { HostProbe } from '../driver.js'
import {
  CleanErrorCode,
  CleanMethod,
  cleanError,
  throwIfCleanAborted,
  type CleanCallOptions,
  type CleanResult,
  type CleanTarget,
  type VerifyResult,
} from '../clean.js'
import {
  formatPciAddress,
  parseHexId,
  parsePciAddress,
  PCI_DEVICES_ROOT,
  readOptional,
} from './pci-sysfs.js'
import { errorMessage } from '../../domain/error-message.js'

/** Where vfio-pci lists the functions bound to it. */
export const VFIO_PCI_DRIVER_DIR = '/sys/bus/pci/drivers/vfio-pci'

/**
 * The canonical address of the function a handle names (`PCI` and `MDEV` handles carry
 * `domain`/`bus`/`device`/`function`).
 * @throws DriverError CLEAN_TARGET_INVALID when it names none
 */
export function targetFunction(driver: string, target: CleanTarget): string {
  const { domain, bus, device, function: fn } = target.handle.info
  const pci =
    domain === undefined || bus === undefined || device === undefined || fn === undefined
      ? undefined
      : parsePciAddress(`${domain}:${bus}:${device}.${fn}`)
  if (!pci) {
    throw cleanError(
      driver,
      CleanErrorCode.TARGET_INVALID,
      `the ${target.handle.type} handle names no PCI function`,
      { details: { handle: target.handle } },
    )
  }
  return formatPciAddress(pci)
}

/** What a function looks like before its reset, for verify. */
async function snapshot(
  host: HostProbe,
  dir: string,
  address: string,
): Promise<Record<string, string>> {
  const [vendor, device, vfio] = await Promise.all([
    readOptional(host, `${dir}/vendor`),
    readOptional(host, `${dir}/device`),
    host.exists(`${VFIO_PCI_DRIVER_DIR}/${address}`).catch(() => false),
  ])
  return {
    address,
    vendor: (vendor === undefined ? undefined : parseHexId(vendor)) ?? '',
    device: (device === undefined ? undefined : parseHexId(device)) ?? '',
    vfio: vfio ? 'bound' : 'unbound',
  }
}

/**
 * Resets the function at `address` by writing `1` to its sysfs `reset`.
 * @throws DriverError CLEAN_UNSUPPORTED without a `reset` file, CLEAN_FAILED when the function is
 * gone or the write fails
 */
export async function pciFunctionReset(
  host: HostProbe,
  driver: string,
  address: string,
  options: CleanCallOptions & { root?: string } = {},
): Promise<CleanResult> {
  const { root = PCI_DEVICES_ROOT, signal } = options
  const dir = `${root}/${address}`
  throwIfCleanAborted(driver, signal)
  const state = await snapshot(host, dir, address)
  if (state.vendor === '') {
    throw cleanError(driver, CleanErrorCode.FAILED, `PCI function ${address} is not present`, {
      details: { address },
    })
  }
  if (!(await host.exists(`${dir}/reset`))) {
    throw cleanError(
      driver,
      CleanErrorCode.UNSUPPORTED,
      `PCI function ${address} has no reset method (no ${dir}/reset)`,
      { details: { address } },
    )
  }
  const methods = (await readOptional(host, `${dir}/reset_method`))?.trim()
  throwIfCleanAborted(driver, signal)
  try {
    await host.writeFile(`${dir}/reset`, '1')
  } catch (err) {
    throw cleanError(
      driver,
      CleanErrorCode.FAILED,
      `reset of ${address} failed: ${errorMessage(err)}`,
      {
        details: { address },
        cause: err,
      },
    )
  }
  const evidence = [
    `${address} ${state.vendor}:${state.device} vfio-pci ${state.vfio}`,
    ...(methods ? [`reset_method: ${methods}`] : []),
    `wrote 1 to ${dir}/reset`,
  ].join('\n')
  return { method: CleanMethod.PCI_FLR, evidence, state }
}

/**
 * Checks the function after its reset against `before` (what {@link pciFunctionReset} read).
 * @throws DriverError VERIFY_FAILED naming what differs
 */
export async function verifyPciFunction(
  host: HostProbe,
  driver: string,
  before: Readonly<Record<string, string>>,
  options: CleanCallOptions & { root?: string } = {},
): Promise<VerifyResult> {
  const { root = PCI_DEVICES_ROOT, signal } = options
  const address = before.address ?? ''
  throwIfCleanAborted(driver, signal)
  const after = await snapshot(host, `${root}/${address}`, address)
  const problems: string[] = []
  if (after.vendor === '') problems.push('the function is gone')
  else if (after.vendor !== before.vendor || after.device !== before.device)
    problems.push(
      `ids read back ${after.vendor}:${after.device}, were ${before.vendor}:${before.device}`,
    )
  if (before.vfio === 'bound' && after.vfio !== 'bound')
    problems.push('no longer bound to vfio-pci')
  if (problems.length > 0) {
    throw cleanError(
      driver,
      CleanErrorCode.VERIFY_FAILED,
      `after the reset of ${address}: ${problems.join('; ')}`,
      { details: { address, before, after } },
    )
  }
  return {
    evidence: `${address} present, ids ${after.vendor}:${after.device}, vfio-pci ${after.vfio}`,
  }
}

/**
 * The `clean` and `verify` of a driver whose units are PCI functions reset one by one (pci,
 * intel-qat, intel-nic): the handle's function is reset.
 */
export function flrCleanSteps(host: HostProbe, driver: string, root: string = PCI_DEVICES_ROOT) {
  return {
    clean: (target: CleanTarget, options: CleanCallOptions = {}) =>
      pciFunctionReset(host, driver, targetFunction(driver, target), { ...options, root }),
    verify: (_target: CleanTarget, cleaned: CleanResult, options: CleanCallOptions = {}) =>
      verifyPciFunction(host, driver, cleaned.state ?? {}, { ...options, root }),
  }
}
