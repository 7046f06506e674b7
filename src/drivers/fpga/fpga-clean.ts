/**
 * Cleaning an FPGA card (docs/cleaning.md): the operator's blank image (`[intel_fpga] blank_image`,
 * `[xilinx_fpga] blank_image`) is loaded through the same programming path as `program()`
 * (fpga-program.ts: fpgaconf, xbmgmt), so that the next tenant does not get the last tenant's
 * design. No blank image configured, or no programming tool installed: CLEAN_UNSUPPORTED.
 *
 * Verify: when the driver reads an id the blank image gives (intel-fpga's AFU id, with
 * `blank_afu_id` set), that id is read back; otherwise the card's function must still be present.
 */
import type { HostProbe } from '../driver.js'
import {
  CleanErrorCode,
  CleanMethod,
  cleanError,
  isCommandMissing,
  throwIfCleanAborted,
  type CleanCallOptions,
  type CleanResult,
  type CleanTarget,
  type VerifyResult,
} from '../clean.js'
import { runProgrammer } from './fpga-program.js'
import { controlPathAddress, type PciAddress } from '../../domain/inventory/inventory.js'
import {
  formatPciAddress,
  parseHexId,
  parsePciAddress,
  PCI_DEVICES_ROOT,
  readOptional,
} from '../pci/pci-sysfs.js'
import { errorMessage } from '../../domain/error-message.js'

/** Default `clean_timeout` of the FPGA drivers, in seconds (a flash takes minutes). */
export const FPGA_CLEAN_TIMEOUT_S = 1800

/** How one FPGA driver loads an image and reads back what it gives. */
export interface FpgaCleanConfig {
  /** `intel-fpga` or `xilinx-fpga`. */
  driver: string
  /** The config section, for messages (`intel_fpga`). */
  section: string
  /** The image to load; undefined: cleaning is refused. */
  blankImage: string | undefined
  /** The programming command for a card and an image (the one `program()` runs). */
  command: (pci: PciAddress, image: string) => { command: string; args: string[] }
  /** The id the blank image gives, and how to read the card's ids; undefined: presence only. */
  expectId?: { id: string; read: (address: string) => Promise<string[]> }
}

/** An FPGA driver's `clean` and `verify`. */
export function createFpgaCleanSteps(host: HostProbe, config: FpgaCleanConfig) {
  const { driver, section, blankImage } = config
  return {
    async clean(target: CleanTarget, { signal }: CleanCallOptions = {}): Promise<CleanResult> {
      throwIfCleanAborted(driver, signal)
      if (blankImage === undefined) {
        throw cleanError(
          driver,
          CleanErrorCode.UNSUPPORTED,
          `no blank image configured ([${section}] blank_image)`,
        )
      }
      const pci =
        target.controlPath.type === 'PCI'
          ? parsePciAddress(controlPathAddress(target.controlPath))
          : undefined
      if (!pci) {
        throw cleanError(driver, CleanErrorCode.TARGET_INVALID, 'the card has no PCI control path')
      }
      const { command, args } = config.command(pci, blankImage)
      let output: string
      try {
        output = await runProgrammer(host, { driver, pci, imagePath: blankImage, command, args })
      } catch (err) {
        const missing = isCommandMissing((err as { cause?: unknown }).cause)
        throw cleanError(
          driver,
          missing ? CleanErrorCode.UNSUPPORTED : CleanErrorCode.FAILED,
          missing ? `${command} is not installed` : errorMessage(err),
          { details: { address: formatPciAddress(pci), image: blankImage }, cause: err },
        )
      }
      const address = formatPciAddress(pci)
      return {
        method: CleanMethod.FPGA_BLANK_IMAGE,
        evidence: `$ ${[command, ...args].join(' ')}${output.trim() === '' ? '' : `\n${output.trimEnd()}`}`,
        state: { address, image: blankImage },
      }
    },

    async verify(
      _target: CleanTarget,
      cleaned: CleanResult,
      { signal }: CleanCallOptions = {},
    ): Promise<VerifyResult> {
      const address = cleaned.state?.address ?? ''
      throwIfCleanAborted(driver, signal)
      const fail = (problem: string) =>
        cleanError(
          driver,
          CleanErrorCode.VERIFY_FAILED,
          `after loading the blank image on ${address}: ${problem}`,
          {
            details: { address },
          },
        )
      const vendor = await readOptional(host, `${PCI_DEVICES_ROOT}/${address}/vendor`)
      if (vendor === undefined || parseHexId(vendor) === undefined) throw fail('the card is gone')
      if (config.expectId) {
        const ids = await config.expectId.read(address)
        if (!ids.includes(config.expectId.id))
          throw fail(
            `AFU ids read back ${ids.join(', ') || 'none'}, expected ${config.expectId.id}`,
          )
        return { evidence: `${address} present, AFU id ${config.expectId.id}` }
      }
      return { evidence: `${address} present` }
    },
  }
}
