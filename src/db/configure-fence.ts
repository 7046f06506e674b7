/**
 * A device fenced by the conductor after a configure that could not put the old layout back
 * (health `failed`, reason `configure failed: …`; docs/drivers.md): reports do not lift it
 * (src/domain/health-diff.ts); a later configure that succeeds does.
 */
import type { Kysely } from 'kysely'
import type { Database } from './core/schema.js'
import { CONFIGURE_FAILED_PREFIX } from '../domain/health-diff.js'
import { recordHealthChanges } from './health-transitions.js'
import { deleteReportHashes } from './service-rows.js'

/** Fences device `deviceId` with `reason`, or with null lifts a configure's fence; whether it changed. */
export async function setConfigureFence(
  db: Kysely<Database>,
  device: { id: number; hostname: string },
  reason: string | null,
  now: string,
): Promise<boolean> {
  const cur = await db
    .selectFrom('devices')
    .select(['health', 'health_reason'])
    .where('id', '=', device.id)
    .executeTakeFirst()
  if (!cur) return false
  const fenced =
    cur.health === 'failed' && (cur.health_reason?.startsWith(CONFIGURE_FAILED_PREFIX) ?? false)
  if (reason === null && !fenced) return false
  const to = reason === null ? 'ok' : 'failed'
  const text = reason === null ? null : `${CONFIGURE_FAILED_PREFIX}${reason}`.slice(0, 255)
  await db
    .updateTable('devices')
    .set({ health: to, health_reason: text, health_updated_at: now, healthy_reports: 0 })
    .where('id', '=', device.id)
    .execute()
  await recordHealthChanges(
    db,
    device.hostname,
    [{ deviceId: device.id, from: cur.health, to, reason: text }],
    now,
  )
  // Lifted: the host's next report is diffed in full, so that the driver's own health applies.
  if (reason === null) await deleteReportHashes(db, [device.hostname])
  return true
}
