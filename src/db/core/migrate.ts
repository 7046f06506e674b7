/**
 * Runs the schema migrations: to the latest (`cyborg db upgrade`, `db sync`; automatic in `cyborg
 * up`), up or down to a revision (`db upgrade --to`, `db downgrade --to`), and reads where the
 * schema is (`db version`). docs/operations.md.
 */
import { sql } from 'kysely'
import { Migrator, NO_MIGRATIONS, type Migration, type MigrationResultSet } from 'kysely/migration'
import { ConflictError, InvalidInputError, UnavailableError } from '../../domain/errors.js'
import { downgradeLosses } from './migration-guards.js'
import type { DatabaseHandle } from './connection.js'
import { initialMigration } from './migrations/0001-initial.js'
import { placementMigration } from './migrations/0002-placement.js'
import { arqsMigration } from './migrations/0003-arqs.js'
import { arqInstancesMigration } from './migrations/0004-arq-instances.js'
import { v1AttachmentsMigration } from './migrations/0005-v1-attachments.js'
import { commitMarkersMigration } from './migrations/0006-commit-markers.js'
import { deviceHealthMigration } from './migrations/0007-device-health.js'
import { healthTransitionsMigration } from './migrations/0008-health-transitions.js'
import { eventsMigration } from './migrations/0009-events.js'
import { webhooksMigration } from './migrations/0010-webhooks.js'
import { quotaProjectsMigration } from './migrations/0011-quota-projects.js'
import { deviceIdentitiesMigration } from './migrations/0012-device-identities.js'
import { custodyMigration } from './migrations/0013-custody.js'
import { handleCleaningMigration } from './migrations/0014-handle-cleaning.js'
import { reconfigFenceMigration } from './migrations/0015-reconfig-fence.js'
import { arqBoundAtMigration } from './migrations/0016-arq-bound-at.js'
import { arqBindIdMigration } from './migrations/0017-arq-bind-id.js'
import { handleMdevUuidMigration } from './migrations/0018-handle-mdev-uuid.js'
import { eventsResourceIdxMigration } from './migrations/0019-events-resource-idx.js'

function migrations(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '0001-initial': initialMigration(handle.dialect),
    '0002-placement': placementMigration,
    '0003-arqs': arqsMigration(handle.dialect),
    '0004-arq-instances': arqInstancesMigration,
    '0005-v1-attachments': v1AttachmentsMigration(handle.dialect),
    '0006-commit-markers': commitMarkersMigration,
    '0007-device-health': deviceHealthMigration(handle.dialect),
    '0008-health-transitions': healthTransitionsMigration(handle.dialect),
    '0009-events': eventsMigration(handle.dialect),
    '0010-webhooks': webhooksMigration(handle.dialect),
    '0011-quota-projects': quotaProjectsMigration,
    '0012-device-identities': deviceIdentitiesMigration(handle.dialect),
    '0013-custody': custodyMigration(handle.dialect),
    '0014-handle-cleaning': handleCleaningMigration(handle.dialect),
    '0015-reconfig-fence': reconfigFenceMigration(handle.dialect),
    '0016-arq-bound-at': arqBoundAtMigration,
    '0017-arq-bind-id': arqBindIdMigration,
    '0018-handle-mdev-uuid': handleMdevUuidMigration,
    '0019-events-resource-idx': eventsResourceIdxMigration(handle.dialect),
  }
}

export interface MigrationReport {
  /** Names of the migrations applied by this run (empty when already current). */
  applied: string[]
}

const MIGRATION_TABLE = 'cyborg_migrations'

const migrator = (handle: DatabaseHandle) =>
  new Migrator({
    db: handle.db,
    provider: { getMigrations: () => Promise.resolve(migrations(handle)) },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: `${MIGRATION_TABLE}_lock`,
  })

/** Brings the schema to the latest version. Safe to run from several processes at once. */
export function migrateToLatest(handle: DatabaseHandle): Promise<MigrationReport> {
  return outcome(migrator(handle).migrateToLatest())
}

/**
 * Brings the schema to migration `name` (e.g. `'0011-quota-projects'`), up or down: tests of a
 * migration fill a database at the previous version, then migrate it.
 */
export function migrateTo(handle: DatabaseHandle, name: string): Promise<MigrationReport> {
  return outcome(migrator(handle).migrateTo(name))
}

async function outcome(run: Promise<MigrationResultSet>): Promise<MigrationReport> {
  const result = await run
  if (result.error) {
    throw new UnavailableError(
      `database migration failed: ${String((result.error as Error).message ?? result.error)}`,
      {
        cause: result.error,
      },
    )
  }
  return {
    applied: (result.results ?? [])
      .filter((r) => r.status === 'Success')
      .map((r) => r.migrationName),
  }
}

/**
 * Where the schema is: every migration this version knows, in order; the applied ones; the pending
 * ones; and `unknown`, migrations recorded as applied that this version does not have (a newer
 * Cyborg upgraded the database).
 */
export interface MigrationStatus {
  /** Every migration of this version, oldest first. */
  all: string[]
  /** The ones applied, oldest first. */
  applied: string[]
  /** The ones not applied, oldest first. */
  pending: string[]
  /** The last applied known migration; null for an empty schema. */
  current: string | null
  /** Recorded as applied, but not migrations of this version (a newer one applied them). */
  unknown: string[]
}

/** Reads the schema's revision; creates nothing (an empty database is at base). */
export async function migrationStatus(handle: DatabaseHandle): Promise<MigrationStatus> {
  const infos = await migrator(handle).getMigrations()
  const applied = infos.filter((m) => m.executedAt !== undefined).map((m) => m.name)
  const all = infos.map((m) => m.name)
  const tables = await handle.db.introspection.getTables()
  let recorded: string[] = []
  if (tables.some((t) => t.name === MIGRATION_TABLE)) {
    const { rows } = await sql<{
      name: string
    }>`select name from ${sql.table(MIGRATION_TABLE)}`.execute(handle.db)
    recorded = rows.map((r) => r.name)
  }
  return {
    all,
    applied,
    pending: infos.filter((m) => m.executedAt === undefined).map((m) => m.name),
    current: applied.at(-1) ?? null,
    unknown: recorded.filter((n) => !all.includes(n)).sort(),
  }
}

/** No migration applied: `cyborg db downgrade --to base`. */
export const BASE = 'base'

/**
 * A revision as an operator names it: a migration's name (`0012-device-identities`), its number
 * (`0012`, `12`), or `base` / `0` / `0000` (no migration). @throws InvalidInputError naming the
 * known ones
 */
export function resolveRevision(all: readonly string[], rev: string): string {
  const r = rev.trim()
  if (r === BASE || /^0+$/.test(r)) return BASE
  const hit = /^\d+$/.test(r)
    ? all.find((n) => Number(n.slice(0, n.indexOf('-'))) === Number(r))
    : all.find((n) => n === r)
  if (hit === undefined)
    throw new InvalidInputError(
      `unknown revision ${JSON.stringify(rev)}: expected base, a number, or one of ${all.join(', ')}`,
      { details: { field: 'to' } },
    )
  return hit
}

/** Refuses to move a schema that a newer Cyborg has upgraded past what this version knows. */
function refuseUnknown(status: MigrationStatus): void {
  if (status.unknown.length > 0)
    throw new ConflictError(
      `the database has migrations this version does not know (${status.unknown.join(', ')}): a newer Cyborg upgraded it; downgrade it with that version first`,
      { code: 'SCHEMA_NEWER', details: { unknown: status.unknown } },
    )
}

const position = (status: MigrationStatus, rev: string) =>
  rev === BASE ? -1 : status.all.indexOf(rev)

/**
 * Applies the pending migrations up to `to` (all without it). Refuses a revision below the
 * current one, pointing to downgrade.
 */
export async function upgradeTo(handle: DatabaseHandle, to?: string): Promise<MigrationReport> {
  const status = await migrationStatus(handle)
  refuseUnknown(status)
  if (to === undefined) return migrateToLatest(handle)
  const target = resolveRevision(status.all, to)
  if (position(status, target) < position(status, status.current ?? BASE))
    throw new InvalidInputError(
      `${target} is below the current revision ${status.current}: use cyborg db downgrade --to ${to}`,
      { details: { field: 'to' } },
    )
  if (target === BASE) return { applied: [] }
  return outcome(migrator(handle).migrateTo(target))
}

/** What a downgrade undid, newest first, and what it dropped doing so (only with `force`). */
export interface DowngradeReport {
  undone: string[]
  dropped: { migration: string; loss: string }[]
}

/**
 * Undoes the migrations above `to`, newest first. Refuses a revision above the current one, and,
 * unless `force`, refuses while one of the migrations to undo would drop data
 * (migration-guards.ts), naming each and what. @throws ConflictError DOWNGRADE_LOSES_DATA
 */
export async function downgradeTo(
  handle: DatabaseHandle,
  to: string,
  options: { force?: boolean } = {},
): Promise<DowngradeReport> {
  const status = await migrationStatus(handle)
  refuseUnknown(status)
  const target = resolveRevision(status.all, to)
  if (position(status, target) > position(status, status.current ?? BASE))
    throw new InvalidInputError(
      `${target} is above the current revision ${status.current ?? BASE}: use cyborg db upgrade --to ${to}`,
      { details: { field: 'to' } },
    )
  const undo = status.applied.slice(position(status, target) + 1).reverse()
  const losses = await downgradeLosses(handle.db, undo)
  if (losses.length > 0 && !options.force)
    throw new ConflictError(
      `cannot downgrade to ${target}: ${losses.map((l) => `${l.migration}: ${l.loss}`).join('; ')}. Pass --force to drop them (take a backup first)`,
      { code: 'DOWNGRADE_LOSES_DATA', details: { losses } },
    )
  if (undo.length === 0) return { undone: [], dropped: [] }
  const result = await migrator(handle).migrateTo(target === BASE ? NO_MIGRATIONS : target)
  const undone = (result.results ?? [])
    .filter((r) => r.status === 'Success')
    .map((r) => r.migrationName)
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? '?'
    // SQLite and PostgreSQL ran the whole downgrade in one transaction; MariaDB commits DDL as it runs.
    const kept =
      handle.dialect === 'mysql'
        ? `undone before it: ${undone.join(', ') || 'none'}; ${failed} may be half undone`
        : 'rolled back: nothing was undone'
    throw new UnavailableError(
      `downgrade failed at ${failed} (${kept}): ${String((result.error as Error).message ?? result.error)}`,
      { cause: result.error },
    )
  }
  return { undone, dropped: losses }
}
