/**
 * Stands in for a process that dies while it holds a database transaction: kills, from another
 * connection, the server connection of the one transaction open in `db`'s database (PostgreSQL:
 * idle in transaction; MariaDB: an InnoDB transaction), as the server does when its client goes.
 */
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import type { DatabaseHandle } from '../../src/db/core/connection.js'

export async function killTransactionHolder(db: DatabaseHandle): Promise<void> {
  if (db.dialect === 'postgres') {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid()
      and state like 'idle in transaction%'`.execute(db.db)
    assert.equal(rows.length, 1, 'one transaction is open')
    await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(db.db)
    return
  }
  assert.equal(db.dialect, 'mysql', 'SQLite runs in this process: nothing to kill')
  const { rows } = await sql<{ id: number }>`select p.ID as id
    from information_schema.PROCESSLIST p join information_schema.INNODB_TRX t
      on t.trx_mysql_thread_id = p.ID
    where p.DB = database() and p.ID <> connection_id()`.execute(db.db)
  assert.equal(rows.length, 1, 'one transaction is open')
  await sql`kill ${sql.raw(String(Number(rows[0]!.id)))}`.execute(db.db)
}
