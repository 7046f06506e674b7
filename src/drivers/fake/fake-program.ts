/**
 * The fake FPGA's program step (docs/fpga.md), for tests, demos and `bench/program.ts`: it reads
 * the image through the HostProbe and from then on reports the function it holds as the trait
 * `CUSTOM_FPGA_FUNCTION_ID_FAKE_<ID>` (the way a real card's discovery reads its AFU id), where ID
 * is the image's `function_id=<id>` line, or else the first 8 hex digits of its sha256. Options:
 * `program_delay_ms` (how long a program takes; default 0) and `program_outcome` (`ok`, or `fail`:
 * the tool fails part-way and the card holds no known function).
 */
import { createHash } from 'node:crypto'
import type { HostProbe } from '../driver.js'
import { DriverError, InvalidInputError } from '../../domain/errors.js'
import { traitSegment } from '../traits.js'

/** The fake's function of an image's text. */
export function fakeFunctionId(image: string): string {
  const named = /^function_id=(\S+)$/m.exec(image)?.[1]
  return traitSegment(named ?? createHash('sha256').update(image).digest('hex').slice(0, 8))
}

export function createFakeProgrammer(host: HostProbe, options: Record<string, string>) {
  const delayMs = Number(options.program_delay_ms ?? '0')
  if (!Number.isInteger(delayMs) || delayMs < 0)
    throw new InvalidInputError(
      `Invalid input for field 'program_delay_ms': must be a whole number of milliseconds, got ${options.program_delay_ms}`,
      { details: { field: 'program_delay_ms' } },
    )
  const outcome = options.program_outcome ?? 'ok'
  if (outcome !== 'ok' && outcome !== 'fail')
    throw new InvalidInputError(
      `Invalid input for field 'program_outcome': must be ok or fail, got ${outcome}`,
      { details: { field: 'program_outcome' } },
    )
  let functionId: string | undefined
  return {
    /** The trait of the function the card holds, if any. */
    attributes: () =>
      functionId === undefined
        ? []
        : [{ key: 'trait1', value: `CUSTOM_FPGA_FUNCTION_ID_FAKE_${functionId}` }],
    async program(address: string, imagePath: string): Promise<void> {
      // An image it cannot read (a path made up by a test) still programs: its path names it.
      const image = await host.readFile(imagePath).catch(() => imagePath)
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
      if (outcome === 'fail') {
        functionId = undefined
        throw new DriverError(`fake: programming ${address} with ${imagePath} failed part-way`, {
          code: 'PROGRAM_FAILED',
          details: { driver: 'fake', address, imagePath },
        })
      }
      functionId = fakeFunctionId(image)
    },
  }
}
