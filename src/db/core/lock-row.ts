/**
 * One holder at a time across processes, through a lock row (`event_relay` for the event relay,
 * `custody_sealer` for the custody sealer): `withLockRow` runs `fn` holding the row's lock, or
 * resolves undefined at once when another holder has it. PostgreSQL and MariaDB: a transaction that
 * locks row 1 (FOR UPDATE SKIP LOCKED) and runs `fn` in it, so the lock lasts until `fn`'s writes
 * commit, and a holder that dies (its connection drops) releases it with its uncommitted writes.
 * SQLite: a lock in this process (one process writes a SQLite file), and `fn` writes outside any
 * transaction (holding one would stall every other write of the file). Whatever `fn` throws rolls
 * the transaction back and rejects.
 */
import type { Kysely } from 'kysely'
import type { DatabaseHandle } from './connection.js'
import type { Database } from './schema.js'

/** The tables that hold one lock row (id 1). */
export type LockRowTable = 'event_relay' | 'custody_sealer'

/** Per SQLite database: the lock rows this process holds. */
const sqliteHeld = new WeakMap<object, Set<LockRowTable>>()

export async function withLockRow<T>(
  handle: DatabaseHandle,
  table: LockRowTable,
  fn: (db: Kysely<Database>) => Promise<T>,
): Promise<{ value: T } | undefined> {
  if (handle.dialect === 'sqlite') {
    const held = sqliteHeld.get(handle.db) ?? new Set<LockRowTable>()
    sqliteHeld.set(handle.db, held)
    if (held.has(table)) return undefined
    held.add(table)
    try {
      return { value: await fn(handle.db) }
    } finally {
      held.delete(table)
    }
  }
  return handle.db.transaction().execute(async (trx) => {
    const lock = await trx
      .selectFrom(table)
      .select('id')
      .where('id', '=', 1)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst()
    if (!lock) return undefined
    return { value: await fn(trx) }
  })
}
