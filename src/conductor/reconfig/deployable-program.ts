/**
 * Programming a deployable by an operator (`PATCH /v2/deployables/{uuid}/program`; docs/fpga.md):
 *
 * 1. its free units are fenced (src/db/reconfig-fence.ts), or the call is a 409 naming who holds
 *    them; Placement shows them reserved, so that Nova does not schedule onto a card mid-flash;
 * 2. the host's agent downloads the image, checks its hash and signature and programs the card
 *    (`programFpgaImage`), then discovers again (`discover`): its report reaches a conductor, which
 *    brings the new function traits into Placement before it answers;
 * 3. one transaction lifts the fence, records the image (or forgets it, when the card may hold
 *    part of one), appends the custody record `program` and writes the event; Placement is synced
 *    again and the caller gets the answer.
 *
 * An image refused before a byte reached the card (not found, hash, signature) changes nothing.
 * When the agent does not answer, the units stay fenced and the answer is 503: the sweep
 * (reconfig-sweep.ts) rediscovers the device once its agent is back, and only then lifts it.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter, WriteTrx } from '../../db/core/group-commit.js'
import { getDeployableFacts } from '../../db/outbox/device-events.js'
import { updateBitstream } from '../../db/deployables.js'
import { insertEvents } from '../../db/outbox/events.js'
import {
  clearBitstreams,
  getProgramTarget,
  liftReconfigFence,
  takeReconfigFence,
  type ReconfigTarget,
} from '../../db/reconfig-fence.js'
import { CustodyKind } from '../../domain/custody/custody.js'
import {
  DriverError,
  InvalidInputError,
  NotFoundError,
  UnavailableError,
} from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { deployableEvent } from '../../domain/events.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ProgramOutcome } from '../../rpc/conductor-rpc.js'
import { pciAddress } from '../arq/arq-program.js'
import { isNoAnswer } from './reconfig-sweep.js'
import { appendReconfigRecord, type Who } from '../../db/reconfig-record.js'
import { checkDeployableProgram } from '../validate.js'

export interface DeployableProgramDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  /** The agent client for the program itself (its time limit is `[conductor] program_timeout`). */
  programAgentFor: (host: string) => Pick<AgentRpc, 'programFpgaImage'>
  /** The agent client for the rediscovery. */
  agentFor: (host: string) => Pick<AgentRpc, 'discover'>
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  now: () => string
  uuid: () => string
}

/** How the agent's program ended: done; refused before the card; failed on it; no answer. */
type Ending =
  { kind: 'done'; imageId: string } | { kind: 'refused' | 'failed' | 'unknown'; err: unknown }

const endingOf = (err: unknown): Ending =>
  err instanceof DriverError
    ? { kind: 'failed', err }
    : isNoAnswer(err)
      ? { kind: 'unknown', err }
      : { kind: 'refused', err }

export function createDeployableProgram(deps: DeployableProgramDeps) {
  const { db, committer, now } = deps
  const log = deps.log.child({ component: 'program' })

  /** The one transaction that ends an operation the agent answered (or that was refused). */
  const finish = async (
    trx: WriteTrx,
    job: { target: ReconfigTarget; operation: string; imageUuid: string; ending: Ending },
    who: Who,
  ) => {
    const { target, operation, imageUuid, ending } = job
    const dep = target.deployables[0]!
    const at = now()
    const touched = ending.kind !== 'refused'
    const reason = ending.kind === 'done' ? null : errorMessage(ending.err)
    await liftReconfigFence(trx, operation, at)
    if (ending.kind === 'done') await updateBitstream(trx, dep.id, ending.imageId, at)
    else if (touched) await clearBitstreams(trx, [dep.id], at)
    const detail = { image_uuid: imageUuid, operation_uuid: operation, result: reason ?? 'ok' }
    const recordUuid = touched
      ? await appendReconfigRecord(trx, {
          uuid: deps.uuid(),
          kind: CustodyKind.Program,
          target,
          deployableUuid: dep.uuid,
          who,
          detail,
          at,
        })
      : null
    const facts = await getDeployableFacts(trx, dep.id)
    const program = { operationUuid: operation, imageUuid, ...who, reason }
    if (facts)
      await insertEvents(trx, [
        deployableEvent(reason === null ? 'programmed' : 'program_failed', facts, at, {
          ...program,
          custodyRecordUuid: recordUuid,
        }),
      ])
  }

  return async function programDeployable(req: unknown): Promise<ProgramOutcome> {
    const checked = checkDeployableProgram(req)
    const who = { userId: checked.userId ?? null, projectId: checked.projectId ?? null }
    const imageUuid = checked.imageUuid.toLowerCase()
    const target = await getProgramTarget(db.db, checked.uuid.toLowerCase())
    const dep = target.deployables[0]!
    const host = target.hostname
    const operation = deps.uuid()
    await committer.run((trx) =>
      takeReconfigFence(trx, {
        deployableIds: [dep.id],
        operationUuid: operation,
        kind: 'program',
        now: now(),
        what: `program deployable ${dep.uuid}`,
      }),
    )
    const ctx = { deployable: dep.uuid, host, image: imageUuid, operation, user: who.userId }
    log.info(ctx, 'programming a deployable')
    // Placement shows the units reserved while the agent fetches the image (before any flash).
    const reserving = deps.syncPlacement(host)
    let ending: Ending
    try {
      const address = pciAddress(target.controlPath as unknown as Record<string, string>)
      const done = await deps
        .programAgentFor(host)
        .programFpgaImage({ address, image: { imageId: imageUuid } })
      ending = { kind: 'done', imageId: done.imageId }
    } catch (err) {
      ending = endingOf(err)
    }
    await reserving
    if (ending.kind !== 'refused') {
      try {
        // The report brings the card's new function into the database and Placement.
        await deps.agentFor(host).discover({})
      } catch (err) {
        if (ending.kind === 'unknown' || ending.kind === 'failed') {
          log.error({ ...ctx, err }, 'no answer from the agent: the units stay out of service')
          throw new UnavailableError(
            `the agent of ${host} did not answer (${errorMessage(ending.err)}); the units of ${dep.uuid} stay out of service until it rediscovers the card`,
            { code: 'PROGRAM_UNCONFIRMED', details: { operation } },
          )
        }
        // Programmed: the card is known; the next report brings the traits.
        log.warn({ ...ctx, err }, 'programmed, but the rediscovery failed; the next report syncs')
      }
    }
    await committer.run((trx) => finish(trx, { target, operation, imageUuid, ending }, who))
    await deps.syncPlacement(host)
    if (ending.kind !== 'done') {
      log.warn({ ...ctx, err: ending.err }, 'program failed')
      throw imageNotFoundIsInvalid(ending.err)
    }
    log.info({ ...ctx, image: ending.imageId }, 'deployable programmed')
    return { deployable: dep.uuid, imageUuid: ending.imageId, operation }
  }
}

/** Glance's 404 for the image is the caller's bad input (the deployable exists): a 400 naming it. */
function imageNotFoundIsInvalid(err: unknown): unknown {
  if (!(err instanceof NotFoundError) || err.code !== 'IMAGE_NOT_FOUND') return err
  return new InvalidInputError(err.message, {
    code: err.code,
    details: { field: 'image_uuid' },
  })
}
