/**
 * The seed 004 administration commands (api-v1-and-cli.md, docs/cli.md): `driver-list`,
 * `install-driver`, `uninstall-driver`, `update-driver`, `discover-services`, `service-list` and
 * `status`, over the /v1 administration endpoints (docs/api-admin.md).
 *
 * Exit codes: 0 when the call succeeded everywhere it was meant to; 1 with one line on stderr when
 * the API refused it, or when a change or discovery failed on a host or the host's agent did not
 * answer (the table or JSON still shows every host). Listings (`driver-list`, `status`) exit 0 even
 * when an agent is unreachable or a process is down: that is what they are there to show.
 */
import { Option, type Command } from 'commander'
import { action, client, col, progress, query, type ClientFlags, type Row } from './client.js'
import { apiRequest, CliError } from './http.js'
import { print } from './output.js'

interface HostFlags extends ClientFlags {
  host?: string
}

const DRIVER_COLUMNS = [
  col('Host', 'hostname'),
  col('Driver', 'name'),
  col('Version', 'version'),
  col('Status', 'status'),
  col('Devices', 'devices'),
  col('Last Discovery', 'last'),
]
const OUTCOME_COLUMNS = [
  col('Host', 'hostname'),
  col('Status', 'status'),
  col('Enabled', 'enabled'),
  col('Changes', 'changes'),
  col('Error', 'error'),
]
const DISCOVERY_COLUMNS = [
  col('Host', 'hostname'),
  col('Status', 'status'),
  col('Change', 'change'),
  col('Deployable', 'name'),
  col('Type', 'device_type'),
  col('Address', 'address'),
  col('Fields', 'fields'),
]
const SERVICE_COLUMNS = [
  col('Host', 'hostname'),
  col('Backend', 'backend'),
  col('Type', 'backend_type'),
  col('Address', 'address'),
  col('Deployable', 'deployable'),
  col('Service', 'service'),
  col('Description', 'description'),
  col('Units', 'units'),
]
const STATUS_COLUMNS = [
  col('Host', 'host'),
  col('Binary', 'binary'),
  col('Version', 'version'),
  col('State', 'state'),
  col('Last Seen', 'last_seen'),
  col('Age (s)', 'seconds_since_last_seen'),
]

const where = (host: string | undefined) => (host === undefined ? 'every agent' : host)

/** `added 1, updated 0, removed 0` from a report, or ''. */
function changes(report: unknown): string {
  if (report === null || typeof report !== 'object') return ''
  const r = report as Record<string, unknown>
  return `added ${String(r.added)}, updated ${String(r.updated)}, removed ${String(r.removed)}`
}

/** Fails (exit 1) naming the hosts where the call did not succeed; `skipped` hosts are not failures. */
function failIfAnyHostFailed(what: string, hosts: Row[]): void {
  const bad = hosts.filter((h) => h.status === 'failed' || h.status === 'unreachable')
  if (bad.length === 0) return
  const named = bad.map(
    (h) => `${String(h.hostname)} (${String(h.status)}${h.error ? `: ${String(h.error)}` : ''})`,
  )
  throw new CliError(`${what} did not succeed on ${named.join('; ')}`)
}

/** install-driver, uninstall-driver, update-driver: one row per host, then the exit code. */
function printOutcomes(f: HostFlags, what: string, body: { hosts: Row[] }): void {
  for (const h of body.hosts)
    progress(
      f,
      `${String(h.hostname)}: ${String(h.status)}${h.error ? ` (${String(h.error)})` : ''}`,
    )
  const rows = body.hosts.map((h) => ({ ...h, changes: changes(h.report) }))
  print(f.format, f.format === 'json' ? (body as unknown as Row) : rows, OUTCOME_COLUMNS)
  failIfAnyHostFailed(what, body.hosts)
}

/** `key=value` pairs of `--set`, as an options object. */
export function parseSettings(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq <= 0)
      throw new CliError(
        `--set expects key=value, got ${JSON.stringify(pair)}; e.g. --set device_spec='[{"vendor_id": "10de"}]'`,
      )
    out[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return out
}

const hostOption = (command: Command, what: string) =>
  command.option('--host <hostname>', `only the agent on this host (default: ${what})`)

export function registerAdminCommands(program: Command): void {
  registerDriverList(program)
  registerInstallVerbs(program)
  registerUpdateDriver(program)
  registerDiscoverServices(program)
  registerServiceList(program)
  registerStatus(program)
}

/** `driver-list`: the drivers of each agent host. */
function registerDriverList(program: Command): void {
  hostOption(
    client(
      program
        .command('driver-list')
        .description(
          'drivers per agent host: version, status (installed | enabled | disabled), devices found',
        ),
    ),
    'every agent',
  ).action(
    action<HostFlags>(async (f) => {
      const body = await apiRequest<{ drivers: Row[]; hosts: Row[] }>(
        f,
        'GET',
        `/v1/drivers${query({ hostname: f.host })}`,
      )
      if (f.format === 'json') return print(f.format, body as unknown as Row, [])
      const last = (d: Row) => {
        const l = d.last_discovery as Row | null
        return l === null ? 'never' : l.ok ? `ok at ${String(l.at)}` : `failed: ${String(l.error)}`
      }
      const rows: Row[] = body.drivers.map((d) => ({ ...d, last: last(d) }))
      for (const h of body.hosts)
        if (h.status !== 'ok')
          rows.push({ hostname: h.hostname, name: '-', status: h.status, last: h.error })
      print(f.format, rows, DRIVER_COLUMNS)
    }),
  )
}

/** `install-driver` and `uninstall-driver`: one row per host. */
function registerInstallVerbs(program: Command): void {
  for (const [verb, doing] of [
    [
      'install',
      'enable the driver on the agent(s) and run its install step: discovery with it (a driver must be in [agent] enabled_drivers)',
    ],
    [
      'uninstall',
      'disable the driver on the agent(s); refused while any of its devices is allocated (detach or unbind them first)',
    ],
  ] as const) {
    hostOption(
      client(
        program
          .command(`${verb}-driver`)
          .description(doing)
          .argument('<driver_id>', 'the driver: fake, pci, nvidia-gpu, … (or Cyborg alias)'),
      ),
      'every agent that has it',
    ).action(
      action<HostFlags>(async (f, [driver]) => {
        progress(f, `${verb}ing driver ${driver!} on ${where(f.host)} …`)
        const body = await apiRequest<{ hosts: Row[] }>(
          f,
          'POST',
          `/v1/drivers/${encodeURIComponent(driver!)}/${verb}`,
          {
            body: f.host === undefined ? {} : { hostname: f.host },
          },
        )
        printOutcomes(f, `${verb}-driver ${driver!}`, body)
      }),
    )
  }
}

/** `update-driver`: new options for a driver, then rediscovery. */
function registerUpdateDriver(program: Command): void {
  hostOption(
    client(
      program
        .command('update-driver')
        .description(
          "change a driver's options on the agent(s), e.g. the PCI device_spec, then rediscover",
        )
        .argument('<driver_id>', 'the driver: fake, pci, nvidia-gpu, …')
        .addOption(
          new Option(
            '--set <key=value>',
            'an option to set (repeatable), e.g. --set device_spec=\'[{"vendor_id": "10de"}]\'',
          )
            .argParser((value: string, previous: string[] | undefined) => [
              ...(previous ?? []),
              value,
            ])
            .makeOptionMandatory(),
        ),
    ),
    'every agent that has it',
  ).action(
    action<HostFlags & { set: string[] }>(async (f, [driver]) => {
      const options = parseSettings(f.set)
      progress(f, `updating driver ${driver!} on ${where(f.host)} …`)
      const body = await apiRequest<{ hosts: Row[] }>(
        f,
        'PATCH',
        `/v1/drivers/${encodeURIComponent(driver!)}`,
        {
          body: { options, ...(f.host === undefined ? {} : { hostname: f.host }) },
        },
      )
      printOutcomes(f, `update-driver ${driver!}`, body)
    }),
  )
}

/** `discover-services`: what each host's discovery added, changed and removed. */
function registerDiscoverServices(program: Command): void {
  hostOption(
    client(
      program
        .command('discover-services')
        .description('discover now and print what was added, changed and removed, per host'),
    ),
    'every agent',
  ).action(
    action<HostFlags>(async (f) => {
      progress(f, `discovering on ${where(f.host)} …`)
      const body = await apiRequest<{ hosts: Row[] }>(f, 'POST', '/v1/discovery', {
        body: f.host === undefined ? {} : { hostname: f.host },
      })
      for (const h of body.hosts) progress(f, `${String(h.hostname)}: ${String(h.status)}`)
      const rows: Row[] = []
      for (const h of body.hosts) {
        const base = { hostname: h.hostname, status: h.status }
        const items = (['added', 'changed', 'removed'] as const).flatMap((change) =>
          (h[change] as Row[]).map((i) => ({
            ...base,
            change,
            ...i,
            fields: Array.isArray(i.fields) ? i.fields.join(',') : '',
          })),
        )
        rows.push(
          ...(items.length > 0
            ? items
            : [{ ...base, change: h.status === 'ok' ? 'none' : String(h.error) }]),
        )
      }
      print(f.format, f.format === 'json' ? (body as unknown as Row) : rows, DISCOVERY_COLUMNS)
      failIfAnyHostFailed('discover-services', body.hosts)
    }),
  )
}

/** `service-list`: the services each backend offers. */
function registerServiceList(program: Command): void {
  hostOption(
    client(
      program
        .command('service-list')
        .description('the services each backend (device) offers, as last discovered'),
    ),
    'every host',
  )
    .option('--backend <uuid>', 'only this backend (a device uuid, see `cyborg device list`)')
    .action(
      action<HostFlags & { backend?: string }>(async (f) => {
        const body = await apiRequest<{ services: Row[] }>(
          f,
          'GET',
          `/v1/backend_services${query({ hostname: f.host, backend: f.backend })}`,
        )
        print(f.format, body.services, SERVICE_COLUMNS)
      }),
    )
}

/** `status`: the health of the Cyborg processes. */
function registerStatus(program: Command): void {
  client(
    program
      .command('status')
      .description(
        'health of the Cyborg processes (api, conductors, agents) by their last heartbeat; exit 0 even when some are down',
      ),
  ).action(
    action(async (f) => {
      const body = await apiRequest<{ services: Row[] }>(f, 'GET', '/v1/status')
      print(
        f.format,
        f.format === 'json' ? (body as unknown as Row) : body.services,
        STATUS_COLUMNS,
      )
    }),
  )
}
