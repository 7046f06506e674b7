/**
 * `cyborg db import-openstack --from URL [--dry-run] [--merge] [--format table|json]`: takes over an
 * OpenStack Cyborg deployment's database (src/main/commands/openstack-import.ts;
 * docs/migrate-from-openstack-cyborg.md). Exit 0 when every row was brought over (or was there
 * already), 2 when some could not be mapped (each is printed with its reason), 1 when refused.
 * The database modules load only when the command runs.
 */
import { Option, type Command } from 'commander'
import { InvalidInputError } from '../../domain/errors.js'
import { dbAction, type DbCommandDeps } from './db-commands.js'

interface ImportFlags {
  from: string
  dryRun?: boolean
  merge?: boolean
  format: string
}

/** Refuses a `--from` that is not a MariaDB/MySQL or PostgreSQL URL, before anything is opened. */
async function checkFrom(flags: ImportFlags): Promise<void> {
  const { parseConnectionUrl, redactUrl } = await import('../../db/core/connection.js')
  const shown = JSON.stringify(cut(redactUrl(flags.from)))
  const expected =
    'expected mysql+pymysql://user:pass@host/cyborg, mysql://… or postgresql://user:pass@host/cyborg'
  let dialect: string
  try {
    dialect = parseConnectionUrl(flags.from).dialect
  } catch {
    throw new InvalidInputError(`--from ${shown} is not a database URL: ${expected}`)
  }
  if (dialect === 'sqlite')
    throw new InvalidInputError(
      `--from ${shown}: OpenStack Cyborg's database is MariaDB/MySQL or PostgreSQL; ${expected}`,
    )
}

/** A value as echoed in an error: at most 64 characters. */
const cut = (value: string) => (value.length > 64 ? `${value.slice(0, 64)}…` : value)

const IMPORT_OPTIONS = {
  readOnly: (flags: ImportFlags) => flags.dryRun === true,
  check: checkFrom,
}

/** Adds `import-openstack` to the `db` command; returns it. */
export function registerImportCommand(db: Command, deps: DbCommandDeps): Command {
  return db
    .command('import-openstack')
    .description(
      'bring an OpenStack Cyborg database (9.0.0 to 2026.1) into [database] connection, with its uuids',
    )
    .requiredOption(
      '--from <url>',
      'its connection URL: mysql+pymysql://user:pass@host/cyborg, mysql://… or postgresql://…',
    )
    .option(
      '--dry-run',
      'print what would be brought over, and every row that cannot be; write nothing',
    )
    .option('--merge', 'import into a database that holds rows, leaving out the ones it has')
    .addOption(
      new Option('--format <format>', 'table or json').choices(['table', 'json']).default('table'),
    )
    .action(
      dbAction(
        deps,
        'db import-openstack',
        async (handle, _config, flags: ImportFlags) => {
          const imports = await import('./openstack-import.js')
          const report = await imports.runOpenStackImport(handle, {
            from: flags.from,
            dryRun: flags.dryRun === true,
            merge: flags.merge === true,
          })
          process.stdout.write(
            flags.format === 'json'
              ? `${JSON.stringify(imports.importReportJson(report), null, 2)}\n`
              : imports.renderImportReport(report),
          )
          return imports.importExitCode(report)
        },
        IMPORT_OPTIONS,
      ),
    )
}
