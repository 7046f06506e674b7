/**
 * `cyborg quota show [--project P]` (docs/quota.md): a project's limits under the accelerator
 * service and the units it holds through binds Cyborg placed, from `GET /v2/quota` at 2.7. Without
 * `--project`, the caller's own project.
 */
import type { Command } from 'commander'
import { action, client, col, query, type ClientFlags, type Row } from './client.js'
import { apiRequest } from './http.js'
import { print, type Column } from './output.js'

/** The table: resource, limit (`-` for none), in use, and what is left. */
export const QUOTA_COLUMNS: Column<Row>[] = [
  col('Resource', 'resource'),
  { header: 'Limit', value: (r) => (r.limit === null ? '-' : String(r.limit)) },
  col('In Use', 'in_use'),
  {
    header: 'Left',
    value: (r) =>
      r.limit === null ? '-' : String(Math.max(0, Number(r.limit) - Number(r.in_use))),
  },
]

interface QuotaBody {
  quota: { project_id: string; driver: string; resources: Row[] }
}

export function registerQuotaCommands(program: Command): void {
  const quota = program.command('quota').description('quota on the binds Cyborg places itself')
  client(quota.command('show').description("a project's limits and usage"))
    .option('--project <id>', "the project (default: the caller's)")
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & { project?: string }
        const q = query({ project_id: f.project })
        const body = await apiRequest<QuotaBody>(f, 'GET', `/v2/quota${q}`, { version: '2.7' })
        if (f.format === 'json') return print(f.format, body as unknown as Row, [])
        const { project_id: project, driver } = body.quota
        if (f.format === 'table') process.stdout.write(`project ${project} (driver ${driver})\n`)
        print(f.format, body.quota.resources, QUOTA_COLUMNS)
      }),
    )
}
