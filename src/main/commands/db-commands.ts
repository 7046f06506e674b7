/**
 * `cyborg db`: `version`, `upgrade [--to REV]` (`sync` is its old name), `downgrade --to REV
 * [--force]`, `backup PATH` and `check` (docs/operations.md). Each opens `[database]
 * connection` itself; the database modules load only when a command runs, so that `--help` answers
 * at once. Another module adds its own subcommand to the `db` command that `registerDbCommands`
 * returns (`cyborg db import-openstack`), using `dbAction` for the same opening and failures.
 */
import { existsSync } from 'node:fs'
import { Option, type Command } from 'commander'
import type { Config } from '../../config/config.js'
import type { DatabaseHandle } from '../../db/core/connection.js'
import { InvalidInputError } from '../../domain/errors.js'

export interface DbCommandDeps {
  /** The configuration of `command`: its `--config-file` options, then the environment. */
  configFor(command: Command): Config
  /** Prints `cyborg <name>: <reason>` (a ConfigError as it is) and exits 1. */
  fail(name: string, err: unknown): never
}

const out = (line: string) => void process.stdout.write(`${line}\n`)
const warn = (line: string) => void process.stderr.write(`${line}\n`)

/** How `dbAction` opens the database. */
export interface DbActionOptions<A extends unknown[]> {
  /**
   * The command only reads: the database is opened read-only and nothing is created (a missing
   * SQLite file is named, not made). A function decides from the arguments (`--dry-run`).
   */
  readOnly: boolean | ((...args: A) => boolean)
  /** Checks the arguments before anything is opened; a throw is the command's one-line failure. */
  check?: (...args: A) => void | Promise<void>
}

/**
 * A commander action that opens `[database] connection`, runs `body` on it and closes it. `body`
 * gets what commander passes before the command (the arguments, then the options) and returns the
 * exit code (0 when it returns nothing); a throw is one line on stderr and exit 1.
 */
export function dbAction<A extends unknown[]>(
  deps: DbCommandDeps,
  name: string,
  body: (handle: DatabaseHandle, config: Config, ...args: A) => Promise<number | void>,
  options: DbActionOptions<A> = { readOnly: false },
): (...args: [...A, Command]) => Promise<void> {
  return async (...args) => {
    const command = args.at(-1) as Command
    const given = args.slice(0, -1) as A
    try {
      await options.check?.(...given)
      const config = deps.configFor(command)
      const readOnly =
        typeof options.readOnly === 'function' ? options.readOnly(...given) : options.readOnly
      const { openConfiguredDatabase } = await import('../database.js')
      const handle = await openConfiguredDatabase(config, { readOnly })
      let code: number | void
      try {
        code = await body(handle, config, ...given)
      } finally {
        await handle.close()
      }
      if (code) process.exitCode = code
    } catch (err) {
      deps.fail(name, err)
    }
  }
}

const READ_ONLY = { readOnly: true }

const format = () =>
  new Option('--format <format>', 'table for people, json for scripts')
    .choices(['table', 'json'])
    .default('table')

/**
 * Adds `cyborg db` and its subcommands to `program`; returns the `db` command, so that another
 * module adds its own subcommand to it, in cli.ts:
 * `registerImportCommand(registerDbCommands(program, { configFor, fail }), { configFor, fail })`.
 */
export function registerDbCommands(program: Command, deps: DbCommandDeps): Command {
  const db = program
    .command('db')
    .description('database administration: schema revisions, backup, integrity check')

  db.command('version')
    .description('print the current schema revision and the pending migrations')
    .addOption(format())
    .action(
      dbAction(
        deps,
        'db version',
        async (handle, _config, opts: { format: string }) => {
          const { migrationStatus } = await import('../../db/core/migrate.js')
          const s = await migrationStatus(handle)
          if (opts.format === 'json') {
            const { current, pending, applied, unknown } = s
            const latest = s.all.at(-1)
            return out(
              JSON.stringify({
                database: handle.safeUrl,
                current,
                latest,
                pending,
                applied,
                unknown,
              }),
            )
          }
          out(`database: ${handle.safeUrl}`)
          const newest = s.unknown.at(-1)
          out(
            newest !== undefined
              ? `current:  ${newest} (newer than this Cyborg, which knows up to ${s.all.at(-1)})`
              : `current:  ${s.current ?? 'base (empty schema)'}`,
          )
          out(`pending:  ${s.pending.join(', ') || 'none'}`)
        },
        READ_ONLY,
      ),
    )

  db.command('upgrade')
    .alias('sync')
    .description('apply the pending migrations, or those up to --to REV (sync: its old name)')
    .option('--to <rev>', 'a migration name (0012-device-identities) or its number (12)')
    .action(
      dbAction(deps, 'db upgrade', async (handle, _config, opts: { to?: string }) => {
        const { migrationStatus, upgradeTo } = await import('../../db/core/migrate.js')
        const { applied } = await upgradeTo(handle, opts.to)
        for (const name of applied) out(`applied ${name}`)
        const s = await migrationStatus(handle)
        const where =
          s.pending.length === 0
            ? 'the schema is current'
            : `at ${s.current ?? 'base'}, ${s.pending.length} pending`
        out(
          applied.length > 0
            ? `${handle.safeUrl}: ${applied.length} migration(s) applied; ${where}`
            : `${handle.safeUrl}: nothing to apply; ${where}`,
        )
      }),
    )

  db.command('downgrade')
    .description(
      'undo the migrations above --to REV, newest first; refused while one would drop data, unless --force',
    )
    .requiredOption('--to <rev>', 'a migration name, its number, or base (empty schema)')
    .option('--force', 'drop the data the undone migrations hold (take a backup first)')
    .action(
      dbAction(
        deps,
        'db downgrade',
        async (handle, _config, opts: { to: string; force?: boolean }) => {
          const { downgradeTo, migrationStatus } = await import('../../db/core/migrate.js')
          const report = await downgradeTo(handle, opts.to, { force: opts.force === true })
          for (const d of report.dropped) warn(`dropped (--force): ${d.migration}: ${d.loss}`)
          for (const name of report.undone) out(`undone ${name}`)
          const { current } = await migrationStatus(handle)
          out(
            `${handle.safeUrl}: ${report.undone.length} migration(s) undone; at ${current ?? 'base'}`,
          )
        },
      ),
    )

  db.command('backup')
    .description('copy an SQLite database with what its WAL holds, while the services run')
    .argument('<path>', 'the file to write (must not exist)')
    .action(
      dbAction(
        deps,
        'db backup',
        async (handle, config, dest: string, _opts: unknown) => {
          if (!handle.backup) {
            // Several lines, to paste: not squeezed into the one-line failure.
            const { backupAdvice } = await import('./db-backup-advice.js')
            warn(`cyborg db backup: ${backupAdvice(config.database.connection, dest)}`)
            return 1
          }
          if (existsSync(dest))
            throw new InvalidInputError(`${dest} exists: remove it or name another file`)
          await handle.backup(dest)
          out(`${handle.safeUrl}: copied to ${dest}`)
          return 0
        },
        READ_ONLY,
      ),
    )

  db.command('check')
    .description(
      'read-only integrity checks (references, units in use, Placement drift when [placement] is set); exit 1 on any finding',
    )
    .addOption(format())
    .action(
      dbAction(
        deps,
        'db check',
        async (handle, config, opts: { format: string }) => {
          const { runDbCheck } = await import('./db-check-command.js')
          const { findings, placementChecked } = await runDbCheck(handle, config)
          const byKind: Record<string, number> = {}
          for (const f of findings) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1
          if (opts.format === 'json')
            out(
              JSON.stringify({
                database: handle.safeUrl,
                placementChecked,
                findings,
                summary: { total: findings.length, byKind },
              }),
            )
          else {
            for (const f of findings) out(`${f.kind}: ${f.message}`)
            const kinds = Object.entries(byKind).map(([k, n]) => `${n} ${k}`)
            out(
              `${handle.safeUrl}: ${findings.length} ` +
                `finding(s)${kinds.length > 0 ? ` (${kinds.join(', ')})` : ''}; Placement ` +
                `${placementChecked ? 'checked' : 'not configured, not checked'}`,
            )
          }
          return findings.length > 0 ? 1 : 0
        },
        READ_ONLY,
      ),
    )
  return db
}
