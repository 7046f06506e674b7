/** Runs the schema migrations (`cyborg db sync`; automatic in `cyborg up`). */
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration'
import { UnavailableError } from '../domain/errors.js'
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
