/**
 * The v1 API's writes, conductor side (api-v1-and-cli.md): attach an accelerator to an instance
 * or a host, detach it, and replace its spec.
 *
 * - An attach is an accelerator request with no device profile, made through the same handle
 *   claim (SKIP LOCKED, recorded in the claim's transaction) as a v2 bind, so v1 and v2 never
 *   hand out one device twice and each sees the other's holders. Attaches of one accelerator are
 *   serialised by its deployable's row lock; attaches to one instance also take the instance's
 *   bind lock, as v2 binds do.
 * - A device with attach handles is prepared by its host's agent (vfio-pci, mdev) before the
 *   attachment is Bound; a failure leaves nothing behind. A crash mid-attach leaves a BindStarted
 *   request that the reaper fails, freeing its handle.
 * - A detach deletes the accelerator's v1 attachments through the ARQ delete path (Deleting first,
 *   persisted) and never touches a v2 request; when only v2 requests (Nova's) hold it, it refuses.
 * - The spec is compare-and-set against `If-Match`, under the deployable's row lock.
 * - The attach is v1-attach.ts; the detach and the spec are here, module functions over `V1Context`.
 * - Events as for v2 requests (the attachment is one): `accelerator.arq.created` and `.bound` on
 *   attach, `.unbound` and `.deleted` on detach (through the delete path).
 */
import {
  listHolders,
  getAcceleratorForUpdate,
  updateAccSpecs,
  listV1Attachments,
} from '../db/v1-attachments.js'
import {
  accSpecsEtag,
  attachmentNotFound,
  ifMatchAccepts,
  parseAccSpecsBody,
} from '../domain/v1-accelerator.js'
import type { Arq } from '../domain/arq.js'
import { ConflictError } from '../domain/errors.js'
import { canonicalJson } from '../domain/inventory/inventory.js'
import { formatTimestamp } from '../domain/time.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { checkUuidRequest, checkV1Detach } from './validate.js'
import { attachAccelerator, describe, type V1Context, type V1Deps } from './v1-attach.js'

export type { V1Deps } from './v1-attach.js'

type V1Methods = Pick<
  ConductorRpc,
  'attachAccelerator' | 'detachAccelerator' | 'setAcceleratorSpecs'
>

export function createV1AcceleratorService(deps: V1Deps): V1Methods {
  const log = deps.log.child({ component: 'v1' })
  const ctx: V1Context = { ...deps, log, now: () => formatTimestamp(deps.clock.now()) }
  return {
    attachAccelerator: (req) => attachAccelerator(ctx, req), // v1-attach.ts
    detachAccelerator: (req) => detachAccelerator(ctx, req),
    setAcceleratorSpecs: (req) => setAcceleratorSpecs(ctx, req),
  }
}

/** `detachAccelerator` (ConductorRpc 1.4): deletes the accelerator's v1 attachments, never v2's. */
export async function detachAccelerator(
  deps: V1Context,
  req: Parameters<ConductorRpc['detachAccelerator']>[0],
): ReturnType<ConductorRpc['detachAccelerator']> {
  const { db, arqs, log } = deps
  const { uuid, instanceUuid: instance, projectId } = checkV1Detach(req)
  // A non-admin's call sees and touches only its project's requests: another's are as absent.
  const seen = (a: Arq) => projectId === undefined || a.projectId === projectId
  const acc = await getAcceleratorForUpdate(db.db, db.dialect, uuid, false)
  const holders = (await listHolders(db.db, db.dialect, acc.id, false)).filter(seen)
  const foreign = holders.filter((h) => h.deviceProfileId !== null)
  const mine = (await listV1Attachments(db.db, acc.id)).filter(
    (a) => seen(a) && (instance === undefined || a.instanceUuid === instance),
  )
  if (
    instance !== undefined &&
    mine.length === 0 &&
    !foreign.some((h) => h.instanceUuid === instance)
  ) {
    throw attachmentNotFound(uuid, instance)
  }
  // v2's requests are never touched: with none of v1's to detach, what holds it is theirs.
  if (foreign.length > 0 && mine.length === 0) {
    const held = foreign.map(describe).join('; ')
    throw new ConflictError(
      `accelerator ${uuid} is held by accelerator requests made outside v1: ${held}; they must be unbound or deleted through v2 first`,
      { code: 'ACCELERATOR_HELD', details: { uuid, holders: foreign.map((h) => h.uuid) } },
    )
  }
  const deleted = await arqs.remove(mine)
  const left = mine.filter((a) => !deleted.includes(a.uuid))
  if (left.length > 0) {
    throw new ConflictError(
      `accelerator ${uuid} is not fully detached: ${left.map(describe).join('; ')} could not be released yet; try again`,
      {
        code: 'DETACH_INCOMPLETE',
        details: { uuid, attachments: left.map((a) => a.uuid) },
      },
    )
  }
  if (deleted.length > 0)
    log.info({ accelerator: uuid, detached: deleted }, 'accelerator detached (v1)')
  return { detached: deleted }
}

/** `setAcceleratorSpecs` (ConductorRpc 1.4): compare-and-set against `If-Match` under the row lock. */
export async function setAcceleratorSpecs(
  deps: V1Context,
  req: Parameters<ConductorRpc['setAcceleratorSpecs']>[0],
): ReturnType<ConductorRpc['setAcceleratorSpecs']> {
  const { db, committer, now } = deps
  const { uuid } = checkUuidRequest(req)
  const specs = canonicalJson(parseAccSpecsBody({ acc_specs: req.accSpecs }))
  const ifMatch = req.ifMatch
  return committer.run(async (trx) => {
    const acc = await getAcceleratorForUpdate(trx, db.dialect, uuid)
    const current = accSpecsEtag(acc.accSpecs)
    if (typeof ifMatch === 'string' && !ifMatchAccepts(ifMatch, current)) {
      throw new ConflictError(
        `another process updated the spec of accelerator ${uuid} (its ETag is now ${current}, not ${ifMatch}); read it again and retry`,
        {
          code: 'ACC_SPECS_STALE',
          details: { field: 'If-Match', uuid, etag: current },
        },
      )
    }
    await updateAccSpecs(trx, acc.id, specs, now())
    return { etag: accSpecsEtag(specs) }
  })
}
