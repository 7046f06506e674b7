/**
 * `cyborg custody list|show|export` (docs/custody.md): the custody ledger through `GET /v2/custody`
 * at 2.8. `export` pages through every matching record (`--page-size` a request) and writes one
 * JSON object per line. `cyborg custody verify` reads the database itself (src/main/cli.ts): the
 * check must not depend on what the API says.
 */
import type { Command } from 'commander'
import {
  action,
  client,
  col,
  integerIn,
  MAX_LIMIT,
  query,
  type ClientFlags,
  type Row,
} from './client.js'
import { apiRequest } from './http.js'
import { print, type Column } from './output.js'

const VERSION = '2.8'

export const CUSTODY_COLUMNS: Column<Row>[] = [
  col('Seq', 'seq'),
  col('Kind', 'kind'),
  col('Device', 'device_uuid'),
  col('Project', 'project_id'),
  col('Instance', 'instance_uuid'),
  col('Via', 'allocated_via'),
  col('Bound At', 'bound_at'),
  col('Released At', 'released_at'),
  col('UUID', 'uuid'),
]

interface Filters extends ClientFlags {
  device?: string
  project?: string
  instance?: string
  kind?: string
  since?: string
  until?: string
  limit?: string
  marker?: string
}

const filterOptions = (command: Command) =>
  command
    .option('--device <uuid>', 'only records of this device')
    .option('--project <id>', "only this project's records (an admin: any project)")
    .option('--instance <uuid>', 'only records of this instance')
    .option('--kind <kind>', 'allocation, clean, override or checkpoint')
    .option('--since <time>', 'released at or after this ISO 8601 time')
    .option('--until <time>', 'released before this ISO 8601 time')

const filterQuery = (f: Filters, extra: Record<string, string | undefined> = {}) => ({
  device_uuid: f.device,
  project_id: f.project,
  instance_uuid: f.instance,
  kind: f.kind,
  since: f.since,
  until: f.until,
  ...extra,
})

interface ListBody {
  custody_records: Row[]
}

export function registerCustodyCommands(program: Command): Command {
  const custody = program
    .command('custody')
    .description('the custody ledger: who held each device, and when (docs/custody.md)')
  filterOptions(client(custody.command('list').description('list ledger records, oldest first')))
    .option('--limit <n>', 'at most this many', integerIn(1, MAX_LIMIT))
    .option('--marker <uuid>', 'start after this record')
    .action(
      action(async (flags) => {
        const f = flags as Filters
        const q = query(filterQuery(f, { limit: f.limit, marker: f.marker }))
        const body = await apiRequest<ListBody>(f, 'GET', `/v2/custody${q}`, { version: VERSION })
        print(f.format, body.custody_records, CUSTODY_COLUMNS)
      }),
    )
  client(custody.command('show').description('show one ledger record').argument('<uuid>')).action(
    action(async (flags, [uuid]) => {
      const body = await apiRequest<Row>(flags, 'GET', `/v2/custody/${encodeURIComponent(uuid!)}`, {
        version: VERSION,
      })
      print(flags.format, body, [])
    }),
  )
  filterOptions(
    client(custody.command('export').description('every matching record, one JSON object a line')),
  )
    .option('--page-size <n>', 'records per request (1-100000)', integerIn(1, 100_000), '1000')
    .action(
      action(async (flags) => {
        const f = flags as Filters & { pageSize: string }
        let marker: string | undefined
        for (;;) {
          const q = query(filterQuery(f, { limit: f.pageSize, marker }))
          const { custody_records: page } = await apiRequest<ListBody>(
            f,
            'GET',
            `/v2/custody${q}`,
            { version: VERSION },
          )
          if (page.length > 0)
            process.stdout.write(page.map((r) => JSON.stringify(r)).join('\n') + '\n')
          if (page.length < Number(f.pageSize)) break
          marker = String(page[page.length - 1]!.uuid)
        }
      }),
    )
  return custody
}
