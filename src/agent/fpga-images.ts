/**
 * FPGA programming from an image store (agent RPC 1.3 `programFpgaImage`): fetch the bitstream to
 * a private temporary file (the image source verifies its hash), program it through the driver
 * (`programFpga`), and delete the file whatever happens. The source is a port: the composition root
 * plugs Glance in (`[glance]`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ConflictError, InvalidInputError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { AgentRpc, DeviceActionResult } from '../rpc/agent-rpc.js'

/** Where bitstreams come from. `fetch` writes the image to `dest`, verified, or throws. */
export interface ImageSource {
  fetch(ref: { imageId?: string; functionId?: string }, dest: string): Promise<{ id: string }>
}

export function createFpgaImages(deps: {
  images: ImageSource | undefined
  program: AgentRpc['programFpga']
  log: Logger
}): Pick<AgentRpc, 'programFpgaImage'> {
  return {
    async programFpgaImage(req) {
      const image = (req as { image?: { imageId?: unknown; functionId?: unknown } } | null)?.image
      const imageId = typeof image?.imageId === 'string' ? image.imageId : undefined
      const functionId = typeof image?.functionId === 'string' ? image.functionId : undefined
      if ((imageId === undefined) === (functionId === undefined)) {
        throw new InvalidInputError('name exactly one of image.imageId and image.functionId', {
          details: { field: 'image' },
        })
      }
      if (!deps.images)
        // A configuration no retry changes: a conflict naming the option, not "unavailable".
        throw new ConflictError(
          'this agent has no image store: configure [glance] endpoint_override (or auth_type = password) on it',
          { code: 'NO_IMAGE_SOURCE', details: { option: '[glance] endpoint_override' } },
        )
      const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-bitstream-'))
      try {
        const dest = path.join(dir, 'image.gbs')
        const { id } = await deps.images.fetch(
          { ...(imageId ? { imageId } : {}), ...(functionId ? { functionId } : {}) },
          dest,
        )
        const result: DeviceActionResult = await deps.program({
          address: req.address,
          imagePath: dest,
        })
        deps.log.info({ address: result.address, image: id }, 'FPGA programmed from image')
        return { ...result, imageId: id }
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  }
}
