/**
 * `cyborg webhook create|list|show|set|delete|deliveries` (docs/webhooks.md): endpoints that get
 * Cyborg's events over HTTP, signed. Admin only. `create` prints the signing secret, which the
 * API shows this once; `deliveries --state dead` lists the dead letters.
 */
import type { Command } from 'commander'
import {
  action,
  client,
  col,
  deleteEach,
  integerIn,
  query,
  type ClientFlags,
  type Row,
} from './client.js'
import { apiRequest, CliError } from './http.js'
import { print } from './output.js'

const HOOKS = '/v2/webhooks'

const WEBHOOK_COLUMNS = [
  col('UUID', 'uuid'),
  col('URL', 'url'),
  { header: 'Events', value: (r: Row) => listCell(r.event_types, 'all') },
  { header: 'Projects', value: (r: Row) => listCell(r.project_ids, 'all') },
  col('Enabled', 'enabled'),
  col('Description', 'description'),
]
const DELIVERY_COLUMNS = [
  col('Event (webhook-id)', 'event_uuid'),
  col('Type', 'event_type'),
  col('State', 'state'),
  col('Attempts', 'attempts'),
  col('Last Status', 'last_status'),
  col('Last Error', 'last_error'),
  { header: 'When', value: (r: Row) => r.finished_at ?? r.next_attempt_at },
]

/** A list field as a cell: its items comma-separated, or `empty` for none. */
export function listCell(value: unknown, empty: string): string {
  return Array.isArray(value) && value.length > 0 ? value.join(',') : empty
}

/** Repeatable options: each occurrence adds one value. */
const repeat = (v: string, prev: string[] = []) => [...prev, v]

interface CreateFlags extends ClientFlags {
  event?: string[]
  project?: string[]
  description?: string
  disabled?: boolean
}

interface SetFlags extends CreateFlags {
  endpoint?: string
  enable?: boolean
  disable?: boolean
  allEvents?: boolean
  allProjects?: boolean
}

/** The PATCH body `set` sends: only what its flags change. */
export function changesOf(f: SetFlags): Row {
  if (f.enable && f.disable) throw new CliError('give --enable or --disable, not both')
  if (f.event && f.allEvents) throw new CliError('give --event or --all-events, not both')
  if (f.project && f.allProjects) throw new CliError('give --project or --all-projects, not both')
  const body: Row = {}
  if (f.endpoint !== undefined) body.url = f.endpoint
  if (f.event) body.event_types = f.event
  if (f.allEvents) body.event_types = []
  if (f.project) body.project_ids = f.project
  if (f.allProjects) body.project_ids = []
  if (f.description !== undefined) body.description = f.description
  if (f.enable) body.enabled = true
  if (f.disable) body.enabled = false
  if (Object.keys(body).length === 0)
    throw new CliError(
      'nothing to change: give --endpoint, --event, --all-events, --project, --all-projects, --description, --enable or --disable',
    )
  return body
}

const path = (uuid: string) => `${HOOKS}/${encodeURIComponent(uuid)}`

export function registerWebhookCommands(program: Command): void {
  const webhook = program
    .command('webhook')
    .description(
      "webhooks: HTTP endpoints that get Cyborg's events, signed (Standard Webhooks); admin only",
    )
  client(
    webhook
      .command('create')
      .description(
        'register an endpoint; prints its signing secret, which is shown this once: keep it',
      )
      .argument('<url>', 'the http(s) URL events are posted to'),
  )
    .option(
      '--event <type>',
      'an event type (accelerator.arq.bound) or prefix (accelerator.arq.*) it wants; repeatable; none: all',
      repeat,
    )
    .option('--project <id>', 'a project whose events it wants; repeatable; none: all', repeat)
    .option('--description <text>', 'what it is for')
    .option('--disabled', 'register it disabled (it gets nothing until enabled)')
    .action(
      action<CreateFlags>(async (f, [url]) => {
        const body: Row = { url }
        if (f.event) body.event_types = f.event
        if (f.project) body.project_ids = f.project
        if (f.description !== undefined) body.description = f.description
        if (f.disabled) body.enabled = false
        const created = await apiRequest<Row>(f, 'POST', HOOKS, { body })
        print(f.format, created, [])
        if (f.format === 'table')
          process.stderr.write(
            'The secret above is shown only now; receivers verify signatures with it.\n',
          )
      }),
    )
  client(webhook.command('list').description('list the endpoints')).action(
    action(async (f) => {
      const body = await apiRequest<{ webhooks: Row[] }>(f, 'GET', HOOKS)
      print(f.format, body.webhooks, WEBHOOK_COLUMNS)
    }),
  )
  client(
    webhook
      .command('show')
      .description('show one endpoint and its deliveries counted by state')
      .argument('<uuid>', 'the webhook'),
  ).action(
    action(async (f, [uuid]) => print(f.format, await apiRequest<Row>(f, 'GET', path(uuid!)), [])),
  )
  client(
    webhook
      .command('set')
      .description('change an endpoint: its URL, filters, description, or enable or disable it')
      .argument('<uuid>', 'the webhook'),
  )
    .option('--endpoint <url>', 'post to this URL from now on')
    .option('--event <type>', 'replace the event types (repeatable)', repeat)
    .option('--all-events', 'take every event type')
    .option('--project <id>', 'replace the projects (repeatable)', repeat)
    .option('--all-projects', 'take the events of every project')
    .option('--description <text>', 'what it is for')
    .option('--enable', 'send to it again (what was queued before it was disabled goes first)')
    .option('--disable', 'stop sending to it and queue nothing new for it')
    .action(
      action<SetFlags>(async (f, [uuid]) => {
        const body = changesOf(f)
        print(f.format, await apiRequest<Row>(f, 'PATCH', path(uuid!), { body }), [])
      }),
    )
  client(
    webhook
      .command('delete')
      .description('delete endpoints and their deliveries, dead letters included')
      .argument('<uuid...>', 'the webhooks'),
  ).action(action((f, uuids) => deleteEach(f, uuids, path)))
  client(
    webhook
      .command('deliveries')
      .description("list an endpoint's deliveries, oldest first")
      .argument('<uuid>', 'the webhook'),
  )
    .option('--state <state>', 'only pending, delivered or dead (the dead letters)')
    .option('--limit <n>', 'at most this many (default 100, at most 1000)', integerIn(1, 1000))
    .option('--marker <event>', 'start after the delivery of this event')
    .action(
      action<ClientFlags & { state?: string; limit?: string; marker?: string }>(
        async (f, [uuid]) => {
          const q = query({ state: f.state, limit: f.limit, marker: f.marker })
          const body = await apiRequest<{ deliveries: Row[] }>(
            f,
            'GET',
            `${path(uuid!)}/deliveries${q}`,
          )
          print(f.format, body.deliveries, DELIVERY_COLUMNS)
        },
      ),
    )
}
