/**
 * FPGA programming, shared by the FPGA drivers: the vendor tool runs through the HostProbe (never
 * a shell), with a long time limit, and any failure becomes one DriverError naming the driver, the
 * card and the image. Programming a card can take minutes (a Xilinx shell flash, `--base`), far
 * longer than the probe's default limit for discovery commands.
 */
import type { HostProbe } from '../driver.js'
import { formatPciAddress, parsePciAddress } from '../pci/pci-sysfs.js'
import { DriverError, InvalidInputError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import type { PciAddress } from '../../domain/inventory/inventory.js'

/** How long a programming tool may run. */
export const PROGRAM_TIMEOUT_MS = 30 * 60_000

/** `address` parsed, or InvalidInputError (code PCI_ADDRESS_INVALID). */
export function programTarget(driver: string, address: string): PciAddress {
  const pci = parsePciAddress(address)
  if (!pci) {
    throw new InvalidInputError(
      `${driver}: cannot program ${JSON.stringify(address)}: not a PCI address`,
      {
        code: 'PCI_ADDRESS_INVALID',
        details: { field: 'address' },
      },
    )
  }
  return pci
}

/**
 * Runs `command args` on `host` and returns what it printed; a failure is DriverError PROGRAM_FAILED
 * with the tool's error as cause.
 */
export async function runProgrammer(
  host: HostProbe,
  job: { driver: string; pci: PciAddress; imagePath: string; command: string; args: string[] },
): Promise<string> {
  const { driver, pci, imagePath, command, args } = job
  const address = formatPciAddress(pci)
  try {
    const out = await host.exec(command, args, { timeoutMs: PROGRAM_TIMEOUT_MS })
    return typeof out === 'string' ? out : ''
  } catch (err) {
    throw new DriverError(
      `${driver}: programming ${address} with ${imagePath} failed: ${errorMessage(err)}`,
      {
        code: 'PROGRAM_FAILED',
        details: { driver, address, imagePath, command, args },
        cause: err,
      },
    )
  }
}
