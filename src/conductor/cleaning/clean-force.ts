/**
 * Force-in-service (issue 27; docs/cleaning.md): an operator's `cleanDevice` with `force` puts a
 * device's cleaning or failed units back in service without a clean, never racing one: each unit's
 * agent is first asked to stop every clean of it (`abortClean`, AgentRpc 1.7), and only the units
 * whose agent answered that none runs go back, all in one transaction, as overrides recording who
 * asked and whether a clean was stopped. The others stay out of service, and the error names the
 * host to bring back. Also `askOf`, what the agent is asked about a unit (cleaning.ts asks with it).
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import { listCleaningUnits, type CleaningUnit } from '../../db/cleaning.js'
import { AppError, ConflictError, UnavailableError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc, CleanUnitRequest } from '../../rpc/agent-rpc.js'
import type { DeviceCleanOutcome } from '../../rpc/conductor-rpc.js'
import type { CleanSettle } from './clean-settle.js'

/** What a force needs (cleaning.ts's state has it all). */
export interface ForceInServiceDeps {
  db: DatabaseHandle
  /** The host's agent for `abortClean`, with the ordinary RPC time limit. */
  abortAgentFor: (host: string) => Partial<Pick<AgentRpc, 'abortClean'>>
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  settler: Pick<CleanSettle, 'settleAll'>
}

/**
 * Force-in-service: asks each unit's agent to stop its cleans, then puts back (override record)
 * only the units whose agent answered that none runs any more.
 * @throws ConflictError (agent too old) or UnavailableError (no answer) naming the host, for the
 *   units left out of service
 */
export async function forceInService(
  s: ForceInServiceDeps,
  deviceUuid: string,
  by: { userId: string | null; projectId: string | null },
): Promise<DeviceCleanOutcome> {
  const { abortAgentFor, log, syncPlacement } = s
  const units = await listCleaningUnits(s.db.db, { deviceUuid })
  const answers = await Promise.all(
    units.map(async (unit) => {
      try {
        const abortClean = abortAgentFor(unit.hostname).abortClean
        if (abortClean === undefined) throw new Error('this conductor cannot stop cleans')
        const { aborted } = await abortClean(askOf(unit))
        return { unit, ok: true as const, aborted: aborted === true }
      } catch (err) {
        return { unit, ok: false as const, err }
      }
    }),
  )
  // Every confirmed unit in one transaction (issue 28), not one write per unit.
  const confirmed = answers.flatMap((a) =>
    a.ok
      ? [
          {
            unit: a.unit,
            outcome: {
              kind: 'override' as const,
              reason: 'force-in-service',
              ...by,
              cleanAborted: a.aborted,
            },
          },
        ]
      : [],
  )
  const records = await s.settler.settleAll(confirmed)
  const unsettled = records.find((r) => r.status === 'rejected')
  const done = confirmed
    .filter((_, i) => records[i]!.status === 'fulfilled' && records[i]!.value !== undefined)
    .map((c) => c.unit.handleUuid)
  if (done.length > 0) {
    log.warn(
      { device: deviceUuid, units: done, userId: by.userId },
      'units put back in service without a clean (override)',
    )
    await syncPlacement(units[0]!.hostname)
  }
  const refused = answers.filter((a) => !a.ok)
  if (refused.length > 0) throw abortRefused(deviceUuid, refused, done)
  if (unsettled) throw unsettled.reason
  return { device: deviceUuid, units: done, forced: true }
}

/** What the agent is asked about a unit (`cleanUnit`, `abortClean`): its handle and its release. */
export function askOf(unit: CleaningUnit): CleanUnitRequest {
  return {
    handle: { type: unit.type, info: unit.info },
    // The mdev the tenant had: minted at the claim (docs/nova.md), else the handle's uuid.
    ...(unit.type === 'MDEV' ? { mdevUuid: unit.mdevUuid ?? unit.handleUuid } : {}),
    ticket: unit.allocationUuid ?? `${unit.handleUuid}@${unit.since ?? ''}`,
  }
}

/** The operator's error for units a force left out of service: which host, and what to do. */
function abortRefused(
  deviceUuid: string,
  refused: readonly { unit: CleaningUnit; err: unknown }[],
  forced: readonly string[],
): AppError {
  const host = refused[0]!.unit.hostname
  const units = refused.map((r) => r.unit.handleUuid)
  const details = { device: deviceUuid, host, units, forced }
  const also = forced.length > 0 ? `; put back in service: ${forced.join(', ')}` : ''
  const tooOld = refused.find((r) => r.err instanceof AppError && r.err.code === 'RPC_NO_METHOD')
  if (tooOld)
    return new ConflictError(
      `the agent on host ${host} cannot stop a clean (it is older than agent RPC 1.7): ` +
        `unit(s) ${units.join(', ')} stay out of service; ` +
        `upgrade the agent on ${host}, or let its clean end and run the command again${also}`,
      { code: 'CLEAN_ABORT_UNSUPPORTED', details },
    )
  return new UnavailableError(
    `the agent on host ${host} did not confirm that no clean runs on unit(s) ${units.join(', ')} ` +
      `(${errorMessage(refused[0]!.err)}): they stay out of service; ` +
      `start the agent on ${host} and run the command again${also}`,
    { code: 'CLEAN_ABORT_UNCONFIRMED', details },
  )
}
