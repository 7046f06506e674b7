/**
 * The client subcommands of `cyborg` (api-v1-and-cli.md). They speak HTTP only: `--url` or
 * `CYBORG_URL` (default http://127.0.0.1:6666), `--token` or `OS_TOKEN`. They print a table, or
 * JSON with `--format json`, and a failure exits 1 with one line on stderr that says what to do.
 * So far: `accelerator list|show` (v1), `device list|show|ready` (v2 at 2.5) and `device clean`
 * (v2 at 2.8, docs/cleaning.md).
 */
import type { Command } from 'commander'
import { apiRequest, CliError } from './http.js'
import { print } from './output.js'
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
import { registerConfigure } from './reconfig-commands.js'

const ACCELERATOR_COLUMNS = [
  col('UUID', 'uuid'),
  col('Name', 'name'),
  col('Type', 'type'),
  col('Device Type', 'device_type'),
  col('Capability', 'capability'),
  col('Host', 'hostname'),
  col('Lifecycle', 'lifecycle'),
  col('Attached To', 'attached_to'),
]
const DEVICE_COLUMNS = [
  col('UUID', 'uuid'),
  col('Type', 'type'),
  col('Vendor', 'vendor'),
  col('Model', 'model'),
  col('Host', 'hostname'),
  col('Status', 'status'),
  col('Lifecycle', 'lifecycle'),
  col('Health', 'health'),
]
/** Devices are read at 2.5, which shows status, lifecycle and health. */
const DEVICE_VERSION = '2.5'
/** `POST /v2/devices/{uuid}/clean` appears at 2.8. */
const CLEAN_VERSION = '2.8'

/** What `POST /v2/devices/{uuid}/clean` answers. */
export interface CleanOutcome {
  device: string
  units: string[]
  forced: boolean
}

/** `device clean`'s line for people: what was asked for, and of which units. */
export function cleanSummary({ device, units, forced }: CleanOutcome): string {
  if (units.length === 0)
    return forced
      ? `device ${device}: no unit left cleaning or failed; nothing put back in service`
      : `device ${device}: no unit left cleaning or failed; nothing to clean`
  const n = `${units.length} unit${units.length === 1 ? '' : 's'}`
  return forced
    ? `device ${device}: ${n} put back in service without a clean (an override in the custody ledger): ${units.join(', ')}`
    : `device ${device}: ${n} asked to clean again (see cyborg custody list --device ${device} --kind clean): ${units.join(', ')}`
}

export function registerClientCommands(program: Command): void {
  const accelerator = program
    .command('accelerator')
    .description("v1 accelerators: the inventory through the seed's v1 API")
  client(accelerator.command('list').description('list accelerators'))
    .option('--device-type <type>', 'only this device type (FPGA, GPU, …)')
    .option('--host <hostname>', 'only accelerators on this host')
    .option('--limit <n>', 'at most this many', integerIn(1, MAX_LIMIT))
    .option('--marker <uuid>', 'start after this accelerator')
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & {
          deviceType?: string
          host?: string
          limit?: string
          marker?: string
        }
        const q = query({
          device_type: f.deviceType,
          hostname: f.host,
          limit: f.limit,
          marker: f.marker,
        })
        const body = await apiRequest<{ accelerators: Row[] }>(f, 'GET', `/v1/accelerators${q}`)
        print(f.format, body.accelerators, ACCELERATOR_COLUMNS)
      }),
    )
  client(
    accelerator
      .command('show')
      .description('show one accelerator')
      .argument('<uuid>', 'the accelerator'),
  ).action(
    action(async (flags, [uuid]) =>
      print(flags.format, await apiRequest<Row>(flags, 'GET', `/v1/accelerators/${uuid}`), []),
    ),
  )

  const device = program.command('device').description('v2 devices, with their operator lifecycle')
  client(device.command('list').description('list devices'))
    .option('--type <type>', 'only this device type (FPGA, GPU, …)')
    .option('--host <hostname>', 'only devices on this host')
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & { type?: string; host?: string }
        const body = await apiRequest<{ devices: Row[] }>(
          f,
          'GET',
          `/v2/devices${query({ type: f.type, hostname: f.host })}`,
          { version: DEVICE_VERSION },
        )
        print(f.format, body.devices, DEVICE_COLUMNS)
      }),
    )
  client(
    device.command('show').description('show one device').argument('<uuid>', 'the device'),
  ).action(
    action(async (flags, [uuid]) =>
      print(
        flags.format,
        await apiRequest<Row>(flags, 'GET', `/v2/devices/${uuid}`, { version: DEVICE_VERSION }),
        [],
      ),
    ),
  )
  client(
    device
      .command('ready')
      .description(
        "mark an inactive (or failed) device ready: the host's agent installs it, and it becomes active or error",
      )
      .argument('<uuid>', 'the device'),
  ).action(
    action(async (flags, [uuid]) => {
      if (flags.format === 'table' && process.stderr.isTTY)
        process.stderr.write(`installing device ${uuid} …\n`)
      const result = await apiRequest<Row>(flags, 'POST', `/v2/devices/${uuid}/ready`, {
        version: DEVICE_VERSION,
      })
      print(flags.format, result, [])
      if (result.lifecycle === 'error')
        throw new CliError(
          `the install failed: ${String(result.lifecycle_reason)}; fix it, then run ready again`,
        )
    }),
  )
  client(
    device
      .command('clean')
      .description(
        "clean a device's released units again (left cleaning, or whose clean failed); with " +
          '--force-in-service, put them back in service without a clean (admin)',
      )
      .argument('<uuid>', 'the device')
      .option(
        '--force-in-service',
        'put the units back in service without a clean, recorded in the custody ledger as your override',
      ),
  ).action(
    action<ClientFlags & { forceInService?: boolean }>(async (flags, [uuid]) => {
      const result = await apiRequest<CleanOutcome>(flags, 'POST', `/v2/devices/${uuid}/clean`, {
        version: CLEAN_VERSION,
        body: { force_in_service: flags.forceInService === true },
      })
      if (flags.format === 'json') print(flags.format, result, [])
      else process.stdout.write(`${cleanSummary(result)}\n`)
    }),
  )
  registerConfigure(device)
}
