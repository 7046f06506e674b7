/** Runs the schema migrations (`cyborg db sync`; automatic in `cyborg up`). */
import { Migrator, NO_MIGRATIONS, type Migration, type MigrationResultSet } from 'kysely/migration'
import { ConflictError, InvalidInputError, UnavailableError } from '../domain/errors.js'
import { DOWNGRADE_GUARDS } from './migration-guards.js'
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
  }
}

export interface MigrationReport {
  /** Names of the migrations applied by this run (empty when already current). */
  applied: string[]
}

const migrator = (handle: DatabaseHandle) =>
  new Migrator({
    db: handle.db,
    provider: { getMigrations: () => Promise.resolve(migrations(handle)) },
    migrationTableName: 'cyborg_migrations',
    migrationLockTableName: 'cyborg_migrations_lock',
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

/** The migrations in order, the applied ones, and the last applied (null for an empty schema). */
export interface MigrationStatus {
  all: string[]
  applied: string[]
  pending: string[]
  current: string | null
}

export async function migrationStatus(handle: DatabaseHandle): Promise<MigrationStatus> {
  const infos = await migrator(handle).getMigrations()
  const applied = infos.filter((m) => m.executedAt !== undefined).map((m) => m.name)
  return {
    all: infos.map((m) => m.name),
    applied,
    pending: infos.filter((m) => m.executedAt === undefined).map((m) => m.name),
    current: applied.at(-1) ?? null,
  }
}

/**
 * A revision as an operator names it: a migration's name (`0012-device-identities`), its number
 * (`0012`, `12`), or `base` / `0` (no migration). @throws InvalidInputError naming the known ones
 */
export function resolveRevision(all: readonly string[], rev: string): string | typeof BASE {
  const r = rev.trim()
  if (r === 'base' || /^0+$/.test(r)) return BASE
  const hit = /^\d+$/.test(r)
    ? all.find((n) => Number(n.slice(0, 4)) === Number(r))
    : all.find((n) => n === r)
  if (hit === undefined)
    throw new InvalidInputError(
      `unknown revision ${JSON.stringify(rev)}: expected base, or one of ${all.join(', ')}`,
      { details: { field: 'to' } },
    )
  return hit
}
export const BASE = Symbol('base')

/** Applies the pending migrations up to `to` (all without it). Refuses a revision below the current. */
export async function upgradeTo(handle: DatabaseHandle, to?: string): Promise<MigrationReport> {
  if (to === undefined) return migrateToLatest(handle)
  const status = await migrationStatus(handle)
  const target = resolveRevision(status.all, to)
  if (target === BASE || status.all.indexOf(target) < status.all.indexOf(status.current ?? ''))
    throw new InvalidInputError(
      `${to} is below the current revision ${status.current}: use cyborg db downgrade --to ${to}`,
      { details: { field: 'to' } },
    )
  return outcome(migrator(handle).migrateTo(target))
}

/**
 * Undoes the migrations above `to`, newest first. Refuses while one of them would drop data
 * (migration-guards.ts), naming it, unless `force`.
 */
export async function downgradeTo(
  handle: DatabaseHandle,
  to: string,
  options: { force?: boolean } = {},
): Promise<MigrationReport & { undone: string[] }> {
  const status = await migrationStatus(handle)
  const target = resolveRevision(status.all, to)
  const keep = target === BASE ? 0 : status.all.indexOf(target) + 1
  if (target !== BASE && !status.applied.includes(target))
    throw new InvalidInputError(
      `${target} is not applied (current: ${status.current ?? 'base'}): use cyborg db upgrade --to ${target}`,
      { details: { field: 'to' } },
    )
  const undo = status.applied.slice(keep).reverse()
  if (!options.force) {
    const losses: string[] = []
    for (const name of undo) {
      const lost = await DOWNGRADE_GUARDS[name]?.(handle.db)
      if (lost !== undefined) losses.push(`${name} would drop ${lost}`)
    }
    if (losses.length > 0)
      throw new ConflictError(
        `refusing to downgrade to ${to}: ${losses.join('; ')}. Pass --force to drop them, after a backup`,
        { code: 'DOWNGRADE_LOSES_DATA', details: { losses } },
      )
  }
  const report = await outcome(migrator(handle).migrateTo(target === BASE ? NO_MIGRATIONS : target))
  return { ...report, undone: undo }
}
