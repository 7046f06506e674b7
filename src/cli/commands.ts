/**
 * The client subcommands of `cyborg` (api-v1-and-cli.md). They speak HTTP only: `--url` or
 * `CYBORG_URL` (default http://127.0.0.1:6666), `--token` or `OS_TOKEN`. They print a table, or
 * JSON with `--format json`, and a failure exits 1 with one line on stderr that says what to do.
 * So far: `accelerator list|show` (v1) and `device list|show|ready` (v2 at 2.4).
 */
import { Option, type Command } from 'commander'
import { apiRequest, CliError, type ClientOptions } from './http.js'
import { print, type Column, type Format } from './output.js'

interface ClientFlags extends ClientOptions {
  format: Format
}

type Row = Record<string, unknown>

const col = (header: string, key: string): Column<Row> => ({ header, value: (r) => r[key] })

const ACCELERATOR_COLUMNS = [
  col('UUID', 'uuid'), col('Name', 'name'), col('Type', 'type'), col('Device Type', 'device_type'), col('Capability', 'capability'),
  col('Host', 'hostname'), col('Lifecycle', 'lifecycle'), col('Attached To', 'attached_to'),
]
const DEVICE_COLUMNS = [
  col('UUID', 'uuid'), col('Type', 'type'), col('Vendor', 'vendor'), col('Model', 'model'), col('Host', 'hostname'),
  col('Status', 'status'), col('Lifecycle', 'lifecycle'),
]
/** Devices are read at 2.4, which shows status and lifecycle. */
const DEVICE_VERSION = '2.4'

/** Adds the client options to a command. */
function client(command: Command): Command {
  return command
    .addOption(new Option('--url <url>', 'the Cyborg API').env('CYBORG_URL').default('http://127.0.0.1:6666'))
    .addOption(new Option('--token <token>', 'a Keystone token, sent as X-Auth-Token').env('OS_TOKEN'))
    .addOption(new Option('--format <format>', 'table for people, json for scripts').choices(['table', 'json']).default('table'))
}

/** Runs a command's body; a failure is one line on stderr and exit code 1. */
function action(body: (flags: ClientFlags, args: string[]) => Promise<void>) {
  return async (...params: unknown[]) => {
    const command = params.at(-1) as Command
    const args = params.slice(0, -2).filter((p): p is string => typeof p === 'string')
    try {
      await body(command.opts<ClientFlags>(), args)
    } catch (err) {
      const message = err instanceof CliError ? err.message : err instanceof Error ? err.message : String(err)
      process.stderr.write(`cyborg ${command.parent?.name()} ${command.name()}: ${message.replace(/\s*\n\s*/g, ' ')}\n`)
      process.exitCode = 1
    }
  }
}

/** `?a=1&b=2` from the options that are set, or ''. */
function query(values: Record<string, string | undefined>): string {
  const params = new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined))
  const text = params.toString()
  return text ? `?${text}` : ''
}

export function registerClientCommands(program: Command): void {
  const accelerator = program.command('accelerator').description('v1 accelerators: a view of the inventory (read-only so far)')
  client(accelerator.command('list').description('list accelerators'))
    .option('--device-type <type>', 'only this device type (FPGA, GPU, …)')
    .option('--host <hostname>', 'only accelerators on this host')
    .option('--limit <n>', 'at most this many')
    .option('--marker <uuid>', 'start after this accelerator')
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & { deviceType?: string; host?: string; limit?: string; marker?: string }
        const q = query({ device_type: f.deviceType, hostname: f.host, limit: f.limit, marker: f.marker })
        const body = await apiRequest<{ accelerators: Row[] }>(f, 'GET', `/v1/accelerators${q}`)
        print(f.format, body.accelerators, ACCELERATOR_COLUMNS)
      }),
    )
  client(accelerator.command('show').description('show one accelerator').argument('<uuid>', 'the accelerator'))
    .action(action(async (flags, [uuid]) => print(flags.format, await apiRequest<Row>(flags, 'GET', `/v1/accelerators/${uuid}`), [])))

  const device = program.command('device').description('v2 devices, with their operator lifecycle')
  client(device.command('list').description('list devices'))
    .option('--type <type>', 'only this device type (FPGA, GPU, …)')
    .option('--host <hostname>', 'only devices on this host')
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & { type?: string; host?: string }
        const body = await apiRequest<{ devices: Row[] }>(f, 'GET', `/v2/devices${query({ type: f.type, hostname: f.host })}`, { version: DEVICE_VERSION })
        print(f.format, body.devices, DEVICE_COLUMNS)
      }),
    )
  client(device.command('show').description('show one device').argument('<uuid>', 'the device'))
    .action(action(async (flags, [uuid]) => print(flags.format, await apiRequest<Row>(flags, 'GET', `/v2/devices/${uuid}`, { version: DEVICE_VERSION }), [])))
  client(
    device
      .command('ready')
      .description("mark an inactive (or failed) device ready: the host's agent installs it, and it becomes active or error")
      .argument('<uuid>', 'the device'),
  ).action(
    action(async (flags, [uuid]) => {
      if (flags.format === 'table' && process.stderr.isTTY) process.stderr.write(`installing device ${uuid} …\n`)
      const result = await apiRequest<Row>(flags, 'POST', `/v2/devices/${uuid}/ready`, { version: DEVICE_VERSION })
      print(flags.format, result, [])
      if (result.lifecycle === 'error') throw new CliError(`the install failed: ${String(result.lifecycle_reason)}; fix it, then run ready again`)
    }),
  )
}
