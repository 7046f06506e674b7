/**
 * `cyborg db version | upgrade [--to REV] | downgrade --to REV [--force] | backup PATH | check`
 * (docs/operations.md, "Database tooling"); `db sync` stays in cli.ts as upgrade's old name. The
 * database modules are loaded only when a command runs.
 */
import type { Command } from 'commander'
import type { Config } from '../config/config.js'
import type { DatabaseHandle } from '../db/connection.js'
import { ConfigError } from '../domain/errors.js'

export interface DbCommandDeps {
  configFor(command: Command): Config
  fail(name: string, err: unknown): never
}

const out = (line: string) => process.stdout.write(`${line}\n`)

export function registerDbCommands(db: Command, deps: DbCommandDeps): void {
  /** Opens `[database] connection`, runs `body`, closes; a failure is one line and exit 1. */
  const withDatabase =
    (name: string, body: (handle: DatabaseHandle, ...args: string[]) => Promise<number | void>) =>
    async (...args: unknown[]) => {
      const command = args.at(-1) as Command
      try {
        const { openConfiguredDatabase } = await import('./database.js')
        const handle = await openConfiguredDatabase(deps.configFor(command))
        let code: number | void
        try {
          code = await body(handle, ...(command.args as string[]))
        } finally {
          await handle.close()
        }
        if (code) process.exitCode = code
      } catch (err) {
        deps.fail(name, err)
      }
    }
  db.command('version')
    .description('print the current schema revision and the pending ones')
    .action(
      withDatabase('db version', async (handle) => {
        const { migrationStatus } = await import('../db/migrate.js')
        const s = await migrationStatus(handle)
        out(`${handle.safeUrl}: at ${s.current ?? 'base (empty)'}`)
        out(s.pending.length === 0 ? 'pending: none' : `pending: ${s.pending.join(', ')}`)
      }),
    )

  const upgrade = db
    .command('upgrade')
    .description('apply the pending migrations, or those up to --to REV')
    .option('--to <rev>', 'a migration name (0012-device-identities) or its number (12)')
  upgrade.action(
    withDatabase('db upgrade', async (handle) => {
      const { upgradeTo } = await import('../db/migrate.js')
      const { to } = upgrade.opts<{ to?: string }>()
      const { applied } = await upgradeTo(handle, to)
      for (const name of applied) out(`applied ${name}`)
      out(`${handle.safeUrl}: ${applied.length} migration(s) applied`)
    }),
  )

  const downgrade = db
    .command('downgrade')
    .description(
      'undo the migrations above --to REV (base for all); refused while one would drop data, unless --force',
    )
    .requiredOption('--to <rev>', 'a migration name, its number, or base')
    .option('--force', 'drop the data the undone migrations hold (take a backup first)')
  downgrade.action(
    withDatabase('db downgrade', async (handle) => {
      const { downgradeTo } = await import('../db/migrate.js')
      const { to, force } = downgrade.opts<{ to: string; force?: boolean }>()
      const { undone } = await downgradeTo(handle, to, { force: force === true })
      for (const name of undone) out(`undone ${name}`)
      out(`${handle.safeUrl}: ${undone.length} migration(s) undone`)
    }),
  )

  db.command('backup')
    .description('copy an SQLite database, WAL included, while it runs (online backup API)')
    .argument('<path>', 'the file to write')
    .action(
      withDatabase('db backup', async (handle, dest) => {
        if (!handle.backup)
          throw new ConfigError(
            `db backup copies SQLite databases; ${handle.safeUrl} is ${handle.dialect}: use pg_dump --format=custom or mariadb-dump --single-transaction (docs/operations.md)`,
          )
        await handle.backup(dest!)
        out(`${handle.safeUrl}: copied to ${dest}`)
      }),
    )

  const check = db
    .command('check')
    .description('check the database (references, held units) and Placement when configured')
    .option('--format <format>', 'table or json', 'table')
  check.action(
    withDatabase('db check', async (handle) => {
      const { runDbCheck } = await import('./db-check-command.js')
      const findings = await runDbCheck(handle, deps.configFor(check))
      if (check.opts<{ format: string }>().format === 'json')
        out(JSON.stringify({ findings }, null, 2))
      else {
        for (const f of findings) out(`${f.kind}: ${f.message}`)
        out(`${handle.safeUrl}: ${findings.length} finding(s)`)
      }
      return findings.length > 0 ? 1 : 0
    }),
  )
}
