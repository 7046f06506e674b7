/**
 * Moves of accelerator requests whose rows the caller's transaction holds locked (read with
 * `getArqForUpdate`, arqs.ts): one conditional statement each and no read back, the saved row
 * worked out from the locked one (issue 28: statements per bind cycle).
 */
import type { Kysely } from 'kysely'
import { allowedFrom, type Arq, type ArqState } from '../domain/arq.js'
import { boundAtOf, toColumns, type ArqBinding } from './arqs.js'
import { translateDbError } from './core/errors.js'
import type { AcceleratorRequestRow, Database } from './core/schema.js'
import { toArq } from './reads/arq-views.js'

/** An ARQ's row (`toArq` backwards). */
export const rowOf = (a: Arq): AcceleratorRequestRow => ({
  id: a.id,
  uuid: a.uuid,
  state: a.state,
  device_profile_id: a.deviceProfileId,
  device_profile_group_id: a.deviceProfileGroupId,
  project_id: a.projectId,
  hostname: a.hostname,
  device_rp_uuid: a.deviceRpUuid,
  instance_uuid: a.instanceUuid,
  attach_handle_id: a.attachHandleId,
  deployable_id: a.deployableId,
  created_at: a.createdAt,
  updated_at: a.updatedAt,
  bound_at: a.boundAt,
  bind_id: a.bindId,
})

/**
 * Moves one ARQ whose row this transaction holds (read with `getArqForUpdate`, or moved by this
 * function since) to `to` if its state allows, with one conditional UPDATE and no read: nothing
 * else can change the locked row, so the saved row is `arq` with the written values (issue 28).
 * Undefined when the UPDATE matched nothing. `from`: the states it may leave, when it stands for
 * several moves in one transaction (default `allowedFrom(to)`). Errors as `updateArqStates`.
 */
export async function moveLockedArq(
  db: Kysely<Database>,
  arq: Arq,
  to: ArqState,
  options: { now: string; set?: ArqBinding; from?: readonly ArqState[] },
): Promise<Arq | undefined> {
  const from = [...(options.from ?? allowedFrom(to))]
  if (!from.includes(arq.state)) return undefined
  const values = {
    ...toColumns(options.set ?? {}),
    state: to,
    updated_at: options.now,
    ...boundAtOf(to, options.now),
  }
  const res = await db
    .updateTable('accelerator_requests')
    .set(values)
    .where('id', '=', arq.id)
    .where('state', 'in', from)
    .executeTakeFirst()
    .catch((err: unknown) => {
      throw translateDbError(err, {
        entity: 'accelerator request',
        unique: 'attachHandleId',
        missingParent: 'attachHandleId or deployableId',
        codes: { conflict: 'ATTACH_HANDLE_IN_USE' },
      })
    })
  return Number(res.numUpdatedRows) === 1 ? toArq({ ...rowOf(arq), ...values }) : undefined
}

/**
 * Deletes requests whose rows this transaction holds locked (`arqs` as saved) by id, with nothing
 * read back; resolves with them in id order. Throws if one was not there (a bug: locked rows do not
 * go away), which rolls the caller's write back.
 */
export async function deleteLockedArqs(db: Kysely<Database>, arqs: readonly Arq[]): Promise<Arq[]> {
  const ids = [...new Set(arqs.map((a) => a.id))]
  let deleted = 0
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500)
    const res = await db
      .deleteFrom('accelerator_requests')
      .where('id', 'in', chunk)
      .executeTakeFirst()
    deleted += Number(res.numDeletedRows)
  }
  if (deleted !== ids.length)
    throw new Error(`deleted ${deleted} of ${ids.length} locked accelerator requests`)
  return [...arqs].sort((a, b) => a.id - b.id)
}
