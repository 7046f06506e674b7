/**
 * What `cyborg db backup` says for PostgreSQL and MariaDB, which it does not copy itself: the
 * database's own dump command for the configured database, ready to paste (the password is never
 * printed: pg_dump reads PGPASSWORD or ~/.pgpass, mariadb-dump ~/.my.cnf or asks with -p).
 * docs/operations.md, "Backups".
 */
import { parseConnectionUrl } from '../../db/core/connection.js'

/** `value` as one shell word. */
export const shellWord = (value: string): string =>
  /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`

/** The refusal, with the dump and restore commands for `url`'s database, writing `dest`. */
export function backupAdvice(url: string, dest: string): string {
  const p = parseConnectionUrl(url)
  const db = shellWord(p.database ?? '')
  const file = shellWord(dest)
  const postgres = p.dialect === 'postgres'
  const where = [
    `--host=${p.host}`,
    `--port=${p.port}`,
    `${postgres ? '--username' : '--user'}=${p.user}`,
  ]
    .map(shellWord)
    .join(' ')
  if (postgres)
    return [
      'db backup copies SQLite databases; this one is PostgreSQL. Dump it with pg_dump:',
      `  pg_dump --format=custom ${where} --file=${file} ${db}`,
      `and restore it with: pg_restore --clean --if-exists ${where} --dbname=${db} ${file}`,
    ].join('\n')
  return [
    'db backup copies SQLite databases; this one is MariaDB. Dump it with mariadb-dump:',
    `  mariadb-dump --single-transaction --routines ${where} --result-file=${file} ${db}`,
    `and restore it with: mariadb ${where} ${db} < ${file}`,
  ].join('\n')
}
