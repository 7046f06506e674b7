/**
 * What the ARQ service shares with the v1 attachments (src/conductor/v1-accelerators.ts), and the
 * rule that v2 sees only requests made from a device profile.
 */
import type { Arq } from '../../domain/arq.js'
import { NotFoundError } from '../../domain/errors.js'
import type { ArqBindOutcome, ArqBindRequest } from '../../rpc/conductor-rpc.js'
import { getArq, getArqForUpdate } from '../../db/arqs.js'

export interface ArqInternals {
  /** Has the host's agent make a claimed handle's device ready (nothing for TEST_PCI). */
  prepare(
    host: string,
    handle: { uuid: string; type: string; info: Record<string, string> },
  ): Promise<void>
  /** Unbinds and deletes these requests (Deleting first, persisted); resolves with the uuids deleted. */
  remove(arqs: Arq[]): Promise<string[]>
  /** Tells Nova, in one batch, how these requests ended (when `[nova]` is set; best effort). */
  notify(outcomes: ArqBindOutcome[], bindings: Record<string, ArqBindRequest>): Promise<void>
}

/** A request made through v2 (from a device profile); a v1 attachment has none and v2 does not see it by uuid. */
export const v2Arq = async (db: Parameters<typeof getArq>[0], uuid: string): Promise<Arq> => {
  const arq = await getArq(db, uuid)
  if (arq.deviceProfileId === null)
    throw new NotFoundError(`accelerator request ${uuid} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuid },
    })
  return arq
}

/** `v2Arq` with its row locked until the transaction ends (`getArqForUpdate`). */
export const v2ArqForUpdate = async (
  db: Parameters<typeof getArqForUpdate>[0],
  uuid: string,
): Promise<Arq> => {
  const arq = await getArqForUpdate(db, uuid)
  if (arq.deviceProfileId === null)
    throw new NotFoundError(`accelerator request ${uuid} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuid },
    })
  return arq
}
