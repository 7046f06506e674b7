/**
 * The dispatchers' leases on endpoints (migration 0010). Order is per endpoint, so the lease is
 * too: a dispatcher claims an endpoint (`webhooks.claimed_by` = its claim's token, until
 * `claimed_until`), sends that endpoint's pending deliveries in queue order (through the window of
 * src/domain/webhooks/webhook-window.ts), and releases it. Another dispatcher, in this conductor or
 * another, skips a claimed endpoint until the lease runs out (its holder died), so no two send to
 * one endpoint at once and no delivery is sent twice at once. Outcomes are recorded only while the
 * claim is still held (`recordAttempts` for failures, `recordDelivered` for a run of 2xx answers):
 * a holder whose lease ran out and was taken over writes nothing.
 */
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import { DeliveryState } from '../../domain/webhooks/webhooks.js'
import type { DatabaseHandle, ReadDb } from '../core/connection.js'
import type { Database } from '../core/schema.js'

/** An endpoint this dispatcher holds, with what sending needs. */
export interface ClaimedWebhook {
  id: number
  uuid: string
  url: string
  secret: string
  /**
   * The endpoint was failing when claimed (`retry_at` set): this turn sends one delivery, its
   * oldest, as a probe, and opens the window only once that gets through.
   */
  backingOff: boolean
}

export interface ClaimOptions {
  /** The claim's token (a fresh uuid): what renew, record and release check. */
  token: string
  now: string
  /** The lease's end. */
  until: string
  /** At most this many endpoints. */
  limit: number
}

/**
 * Enabled endpoints with a pending delivery, free (never claimed, released, or the lease ran out)
 * and not backing off; least recently claimed first, so that busy endpoints take turns.
 */
async function dueWebhookIds(db: ReadDb, now: string, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('webhooks as w')
    .select('w.id')
    .where('w.enabled', '=', 1)
    .where((eb) => eb.or([eb('w.claimed_by', 'is', null), eb('w.claimed_until', '<', now)]))
    .where((eb) => eb.or([eb('w.retry_at', 'is', null), eb('w.retry_at', '<=', now)]))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('webhook_deliveries as d')
          .select('d.id')
          .whereRef('d.webhook_id', '=', 'w.id')
          .where('d.state', '=', DeliveryState.Pending),
      ),
    )
    .orderBy(sql`coalesce(w.claimed_until, '')`)
    .orderBy('w.id')
    .limit(limit)
    .execute()
  return rows.map((r) => Number(r.id))
}

/**
 * Claims up to `limit` due endpoints. PostgreSQL and MariaDB: the candidates are locked
 * `FOR UPDATE SKIP LOCKED` (another dispatcher's claim in flight is skipped, not waited for) and
 * re-checked under the lock, then stamped. SQLite: each is stamped by a conditional UPDATE.
 */
export async function claimDueWebhooks(
  handle: DatabaseHandle,
  { token, now, until, limit }: ClaimOptions,
): Promise<ClaimedWebhook[]> {
  if (limit <= 0) return []
  const candidates = await dueWebhookIds(handle.db, now, limit)
  if (candidates.length === 0) return []
  const free = (db: Kysely<Database>) =>
    db
      .selectFrom('webhooks')
      .select('id')
      .where('id', 'in', candidates)
      .where('enabled', '=', 1)
      .where((eb) => eb.or([eb('claimed_by', 'is', null), eb('claimed_until', '<', now)]))
  const stamp = (db: Kysely<Database>, ids: number[]) =>
    db
      .updateTable('webhooks')
      .set({ claimed_by: token, claimed_until: until })
      .where('id', 'in', ids)
      .executeTakeFirst()
  if (handle.dialect === 'sqlite') {
    for (const id of candidates) {
      await handle.db
        .updateTable('webhooks')
        .set({ claimed_by: token, claimed_until: until })
        .where('id', '=', id)
        .where('enabled', '=', 1)
        .where((eb) => eb.or([eb('claimed_by', 'is', null), eb('claimed_until', '<', now)]))
        .executeTakeFirst()
    }
  } else {
    await handle.db.transaction().execute(async (trx) => {
      const q = free(trx).orderBy('id')
      // PostgreSQL: NO KEY UPDATE does not wait for the sink's foreign-key checks (KEY SHARE).
      const locked = await (handle.dialect === 'postgres' ? q.forNoKeyUpdate() : q.forUpdate())
        .skipLocked()
        .execute()
      if (locked.length > 0)
        await stamp(
          trx,
          locked.map((r) => Number(r.id)),
        )
    })
  }
  const rows = await handle.db
    .selectFrom('webhooks')
    .select(['id', 'uuid', 'url', 'secret', 'retry_at'])
    .where('claimed_by', '=', token)
    .where('id', 'in', candidates)
    .orderBy('id')
    .execute()
  return rows.map((r) => ({
    id: Number(r.id),
    uuid: r.uuid,
    url: r.url,
    secret: r.secret,
    backingOff: r.retry_at !== null,
  }))
}

/** Extends a held claim to `until` (renews the lease); false when it is no longer held. */
export async function updateWebhookClaim(
  db: Kysely<Database>,
  webhookId: number,
  token: string,
  until: string,
): Promise<boolean> {
  const res = await db
    .updateTable('webhooks')
    .set({ claimed_until: until })
    .where('id', '=', webhookId)
    .where('claimed_by', '=', token)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Lets a held claim go (its `claimed_until` stays as the time of the last turn). */
export async function releaseWebhookClaim(
  db: Kysely<Database>,
  webhookId: number,
  token: string,
  now: string,
): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ claimed_by: null, claimed_until: now })
    .where('id', '=', webhookId)
    .where('claimed_by', '=', token)
    .execute()
}

/** What one attempt came to. */
export interface AttemptOutcome {
  state: DeliveryState
  /** Attempts made, this one included. */
  attempts: number
  at: string
  status: number | null
  error: string | null
  /** When the next attempt is due (pending); the endpoint backs off until then. */
  nextAttemptAt: string
}

/**
 * Records the attempts of one turn (at most the window's, so the transaction is bounded), only
 * while `token` still holds the endpoint, and sets its backoff: `retryAt` (the receiver is
 * failing; the next turn probes with one delivery), or null (it answers). Resolves false, writing
 * nothing, when the claim was lost.
 */
export async function recordAttempts(
  db: Kysely<Database>,
  claim: { webhookId: number; token: string },
  attempts: readonly { deliveryId: number; outcome: AttemptOutcome }[],
  retryAt: string | null,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const held = await trx
      .updateTable('webhooks')
      .set({ retry_at: retryAt })
      .where('id', '=', claim.webhookId)
      .where('claimed_by', '=', claim.token)
      .executeTakeFirst()
    if (Number(held.numUpdatedRows) !== 1) return false
    for (const { deliveryId, outcome } of attempts)
      await trx
        .updateTable('webhook_deliveries')
        .set({
          state: outcome.state,
          attempts: outcome.attempts,
          last_attempt_at: outcome.at,
          last_status: outcome.status,
          last_error: outcome.error === null ? null : outcome.error.slice(0, 255),
          next_attempt_at: outcome.nextAttemptAt,
          finished_at: outcome.state === DeliveryState.Pending ? null : outcome.at,
        })
        .where('id', '=', deliveryId)
        .where('state', '=', DeliveryState.Pending)
        .execute()
    return true
  })
}

/**
 * Records several deliveries of one endpoint as delivered by one attempt each (a run of 2xx
 * answers), in one transaction: the claim is checked once, then one UPDATE per distinct status.
 * Resolves false, writing nothing, when the claim was lost.
 */
export async function recordDelivered(
  db: Kysely<Database>,
  claim: { webhookId: number; token: string },
  delivered: readonly { deliveryId: number; status: number }[],
  at: string,
): Promise<boolean> {
  if (delivered.length === 0) return true
  return db.transaction().execute(async (trx) => {
    const held = await trx
      .updateTable('webhooks')
      .set({ retry_at: null })
      .where('id', '=', claim.webhookId)
      .where('claimed_by', '=', claim.token)
      .executeTakeFirst()
    if (Number(held.numUpdatedRows) !== 1) return false
    const byStatus = new Map<number, number[]>()
    for (const d of delivered)
      byStatus.set(d.status, [...(byStatus.get(d.status) ?? []), d.deliveryId])
    for (const [status, ids] of byStatus) {
      await trx
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          state: DeliveryState.Delivered,
          attempts: eb('attempts', '+', 1),
          last_attempt_at: at,
          last_status: status,
          last_error: null,
          next_attempt_at: at,
          finished_at: at,
        }))
        .where('id', 'in', ids)
        .where('state', '=', DeliveryState.Pending)
        .execute()
    }
    return true
  })
}
