/**
 * FPGA programming during a bind: when the request group names a bitstream (`accel:bitstream_id`,
 * a Glance image id) or a function (`accel:function_id`), the host's agent downloads the image,
 * checks it against Glance's hash and programs it, unless the FPGA already runs that image. The
 * new image is recorded with `accelerator.deployable.programmed` in one transaction, and the agent
 * is asked to rediscover the card at once (its new function traits reach Placement without
 * waiting for the periodic discovery; the bind does not wait for that).
 */
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { type BindTarget } from '../../db/arq-targets.js'
import type { ArqSpec } from '../../domain/arq.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import { updateBitstream } from '../../db/deployables.js'
import { getDeployableFacts } from '../../db/outbox/device-events.js'
import { insertEvents } from '../../db/outbox/events.js'
import { deployableEvent } from '../../domain/events.js'
import { errorMessage } from '../../domain/error-message.js'

/** `dddd:bb:dd.f` from a PCI address's parts. */
export const pciAddress = (info: Record<string, string>) =>
  `${info.domain}:${info.bus}:${info.device}.${info.function}`

export interface ProgrammerDeps {
  agentFor?:
    | ((host: string) => Pick<AgentRpc, 'programFpgaImage'> & Partial<Pick<AgentRpc, 'discover'>>)
    | undefined
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  now: () => string
}

/** Resolves with a failure reason, or undefined when there was nothing to do or it worked. */
export function createFpgaProgrammer(deps: ProgrammerDeps) {
  return async (
    host: string,
    target: BindTarget,
    spec: ArqSpec | undefined,
  ): Promise<string | undefined> => {
    const { bitstream_id: imageId, function_id: functionId } = spec?.accel ?? {}
    if (imageId === undefined && functionId === undefined) return undefined
    if (imageId !== undefined && functionId !== undefined)
      return 'a group may name accel:bitstream_id or accel:function_id, not both'
    if (imageId !== undefined && target.bitstreamId === imageId) return undefined
    if (!deps.agentFor) return 'no agent RPC to program FPGAs'
    const address = pciAddress(JSON.parse(target.controlPath) as Record<string, string>)
    try {
      const image = imageId !== undefined ? { imageId } : { functionId: functionId! }
      const done = await deps.agentFor(host).programFpgaImage({ address, image })
      await deps.committer.run(async (trx) => {
        const at = deps.now()
        await updateBitstream(trx, target.deployableId, done.imageId, at)
        const programmed = await getDeployableFacts(trx, target.deployableId)
        if (programmed) await insertEvents(trx, [deployableEvent('programmed', programmed, at)])
      })
      deps.log.info({ deployable: target.name, image: done.imageId }, 'FPGA programmed for a bind')
      // The card's new function goes to Placement now, not at the next periodic discovery; the
      // bind does not wait for it (its own unit is already held).
      const { discover } = deps.agentFor(host)
      if (discover)
        void discover({}).catch((err: unknown) =>
          deps.log.warn({ err, host }, 'rediscovery after a bind-time program failed'),
        )
      return undefined
    } catch (err) {
      return `programming ${target.name} failed: ${errorMessage(err)}`
    }
  }
}
