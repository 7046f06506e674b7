/**
 * `cyborg top [--host H] [--once] [--interval S]` (docs/cli.md): the live device telemetry of the
 * fleet or of one host, from `GET /v1/telemetry`: one row per device with its utilisation, memory,
 * temperature, power, ECC errors, wear and the age of its sample. On a terminal it redraws in
 * place (clear screen, cursor home) every `--interval` seconds until Ctrl-C; without a terminal,
 * with `--once` or with `--format json`, it prints once. While redrawing, an unreachable API or a
 * 5xx is shown in place of the table and retried at the next interval; a refusal (401, 403) ends
 * it, as it ends a single print, with exit code 1.
 */
import type { Command } from 'commander'
import { action, client, col, query, type ClientFlags, type Row } from './client.js'
import { apiRequest, CliError, cutValue } from './http.js'
import { renderTable } from './output.js'

interface TopFlags extends ClientFlags {
  host?: string
  once?: boolean
  interval: string
}

export const TOP_COLUMNS = [
  col('Host', 'host'),
  col('Device', 'device'),
  col('Type', 'type'),
  col('Vendor', 'vendor'),
  col('Util', 'util'),
  col('Memory', 'memory'),
  col('Temp', 'temp'),
  col('Power', 'power'),
  col('ECC c/u', 'ecc'),
  col('Wear', 'wear'),
  col('Age', 'age'),
]

const GIB = 1024 ** 3
const MIB = 1024 ** 2

const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined

/** `45%`; `-` when absent. */
const percent = (ratio: number | undefined): string =>
  ratio === undefined ? '-' : `${Math.round(ratio * 100)}%`

/** `1.5/40.0 GiB` (MiB below a GiB); either side `-` when absent. */
export function memoryCell(used: number | undefined, total: number | undefined): string {
  if (used === undefined && total === undefined) return '-'
  const [unit, size] = Math.max(used ?? 0, total ?? 0) >= GIB ? ['GiB', GIB] : ['MiB', MIB]
  const show = (n: number | undefined) => (n === undefined ? '-' : (n / size).toFixed(1))
  return `${show(used)}/${show(total)} ${unit}`
}

/** `12s`, `4m`, `2h`. */
export function ageCell(seconds: unknown): string {
  const s = num(seconds)
  if (s === undefined) return '-'
  return s < 120
    ? `${Math.round(s)}s`
    : s < 7200
      ? `${Math.round(s / 60)}m`
      : `${Math.round(s / 3600)}h`
}

/** The table rows of `GET /v1/telemetry`'s devices (pure). */
export function topRows(devices: readonly Row[]): Row[] {
  return devices.map((d) => {
    const v = (d.values ?? {}) as Record<string, unknown>
    const temp = num(v.temperature_celsius)
    const power = num(v.power_watts)
    const [c, u] = [num(v.ecc_correctable), num(v.ecc_uncorrectable)]
    return {
      host: d.hostname,
      device: d.device_uuid ?? d.control_path,
      type: d.type ?? '-',
      vendor: d.vendor ?? '-',
      util: percent(num(v.utilization_ratio)),
      memory: memoryCell(num(v.memory_used_bytes), num(v.memory_total_bytes)),
      temp: temp === undefined ? '-' : `${Math.round(temp)} C`,
      power: power === undefined ? '-' : `${power.toFixed(1)} W`,
      ecc: c === undefined && u === undefined ? '-' : `${c ?? '-'}/${u ?? '-'}`,
      wear: percent(num(v.wear_ratio)),
      age: ageCell(d.age_seconds),
    }
  })
}

/** Clear the screen and put the cursor top left (ANSI). */
export const CLEAR_SCREEN = '\x1b[2J\x1b[H'

/** What `cyborg top` writes to and waits with (the process's, or a test's). */
export interface TopIo {
  write(text: string): void
  isTTY: boolean
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>
  /** Aborted by Ctrl-C: the loop ends. */
  signal: AbortSignal
  now(): Date
}

/** `--interval` in ms: a number of seconds from 0.2 to 3600 (a timer holds at most 24.8 days). */
export function intervalMs(text: string): number {
  const seconds = Number(text)
  if (!Number.isFinite(seconds) || seconds < 0.2 || seconds > 3600)
    throw new CliError(
      `--interval must be a number of seconds, from 0.2 to 3600, got '${cutValue(text)}'`,
    )
  return Math.round(seconds * 1000)
}

/** Prints once, or redraws until `io.signal` aborts (see the file's comment). */
export async function runTop(flags: TopFlags, io: TopIo): Promise<void> {
  const every = intervalMs(flags.interval)
  const path = `/v1/telemetry${query({ hostname: flags.host })}`
  const fetchDevices = async () =>
    (await apiRequest<{ devices: Row[] }>(flags, 'GET', path)).devices
  if (flags.once || !io.isTTY || flags.format === 'json') {
    const devices = await fetchDevices()
    if (flags.format === 'json') io.write(`${JSON.stringify({ devices }, null, 2)}\n`)
    else io.write(renderTable(topRows(devices), TOP_COLUMNS))
    return
  }
  while (!io.signal.aborted) {
    let screen: string
    try {
      const devices = await fetchDevices()
      const hosts = new Set(devices.map((d) => d.hostname)).size
      screen =
        `cyborg top: ${devices.length} devices on ${hosts} hosts, every ${every / 1000} s ` +
        `(Ctrl-C to quit)  ${io.now().toISOString()}\n\n` +
        renderTable(topRows(devices), TOP_COLUMNS)
    } catch (err) {
      // Refused (401, 403, 404): waiting will not help. Unreachable or 5xx: show it and retry.
      if (!(err instanceof CliError) || (err.status !== undefined && err.status < 500)) throw err
      screen = `cyborg top: ${err.message} (retrying every ${every / 1000} s)\n`
    }
    if (io.signal.aborted) break
    io.write(CLEAR_SCREEN + screen)
    await io.sleep(every, io.signal)
  }
}

/** The process's terminal: stdout, a timer, and Ctrl-C. */
function processIo(): TopIo & { done(): void } {
  const controller = new AbortController()
  const onInterrupt = () => controller.abort()
  process.once('SIGINT', onInterrupt)
  return {
    write: (text) => void process.stdout.write(text),
    isTTY: process.stdout.isTTY === true,
    signal: controller.signal,
    now: () => new Date(),
    sleep: (ms, signal) =>
      new Promise((resolve) => {
        const timer = setTimeout(done, ms)
        function done() {
          clearTimeout(timer)
          signal.removeEventListener('abort', done)
          resolve()
        }
        signal.addEventListener('abort', done, { once: true })
      }),
    done: () => void process.removeListener('SIGINT', onInterrupt),
  }
}

export function registerTopCommands(program: Command): void {
  client(
    program
      .command('top')
      .description(
        "devices' live telemetry (utilisation, memory, temperature, power, ECC, wear) of the fleet or one host",
      ),
  )
    .option('--host <hostname>', 'only this host')
    .option('--once', 'print once, even on a terminal')
    .option('--interval <seconds>', 'seconds between redraws on a terminal', '5')
    .action(
      action<TopFlags>(async (flags) => {
        const io = processIo()
        try {
          await runTop(flags, io)
        } finally {
          io.done()
        }
      }),
    )
}
