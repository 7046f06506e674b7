/**
 * `cyborg capacity [--resource-class RC] [--host H] [--trait T]… [--group-by host|resource_class|device_type]`
 * (docs/capacity.md): attach handles counted as used, fenced, reserved, cleaning and free, from
 * `GET /v2/capacity` at 2.6. On a terminal each row gets a bar of width 20 and a legend line above
 * the table; piped, the table is plain.
 */
import type { Command } from 'commander'
import { action, client, col, query, type ClientFlags, type Row } from './client.js'
import { apiRequest } from './http.js'
import { print, type Column } from './output.js'

export const BAR_WIDTH = 20
/** The bar's segments, in order, each with its character. */
export const BAR_PARTS = [
  ['used', '█'],
  ['fenced', '▓'],
  ['reserved', '▒'],
  ['cleaning', '▞'],
  ['free', '░'],
] as const
export const LEGEND = BAR_PARTS.map(([name, ch]) => `${ch} ${name}`).join('  ')

/**
 * A bar of `width` characters, each bucket's share proportional to its count. A bucket with units
 * gets at least one character (taken from the widest); the characters left over by rounding down
 * go to the largest remainders, so the bar is always `width` wide (empty when the row has no units).
 */
export function capacityBar(row: Row, width = BAR_WIDTH): string {
  const counts = BAR_PARTS.map(([name]) => Math.max(0, Number(row[name] ?? 0)))
  const sum = counts.reduce((a, b) => a + b, 0)
  if (sum === 0) return ''
  const exact = counts.map((c) => (c * width) / sum)
  const cells = exact.map((e, i) => (counts[i]! > 0 ? Math.max(1, Math.floor(e)) : 0))
  let left = width - cells.reduce((a, b) => a + b, 0)
  const order = exact.map((e, i) => [e - Math.floor(e), i] as const).sort((a, b) => b[0] - a[0])
  for (const [, i] of order) {
    if (left <= 0) break
    if (counts[i]! === 0) continue
    cells[i]! += 1
    left -= 1
  }
  while (left < 0) {
    cells[cells.indexOf(Math.max(...cells))]! -= 1
    left += 1
  }
  return BAR_PARTS.map(([, ch], i) => ch.repeat(cells[i]!)).join('')
}

const COUNTS = ['Total', 'Used', 'Reserved', 'Fenced', 'Cleaning', 'Free'].map((h) =>
  col(h, h.toLowerCase()),
)

/** The columns of a grouping (the default: resource class, host and traits), with or without the bar. */
export function capacityColumns(groupBy: string | undefined, bar: boolean): Column<Row>[] {
  const rc = col('Resource Class', 'resource_class')
  const host = col('Host', 'hostname')
  const traits: Column<Row> = {
    header: 'Traits',
    value: (r) => (Array.isArray(r.traits) ? r.traits.join(',') : ''),
  }
  const keys =
    groupBy === 'host'
      ? [host]
      : groupBy === 'resource_class'
        ? [rc]
        : groupBy === 'device_type'
          ? [col('Device Type', 'device_type')]
          : [rc, host, traits]
  return [
    ...keys,
    ...COUNTS,
    ...(bar ? [{ header: 'Bar', value: (r: Row) => capacityBar(r) }] : []),
  ]
}

export function registerCapacityCommands(program: Command): void {
  client(
    program
      .command('capacity')
      .description(
        'attach handles per resource class, host and traits: used, fenced, reserved, free',
      ),
  )
    .option('--resource-class <rc>', 'only this resource class (PGPU, FPGA, CUSTOM_…)')
    .option('--host <hostname>', 'only this host')
    .option(
      '--trait <trait>',
      'only rows with this trait (repeatable: all of them)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--group-by <grouping>', 'one row per host, resource_class or device_type')
    .action(
      action(async (flags) => {
        const f = flags as ClientFlags & {
          resourceClass?: string
          host?: string
          trait?: string[]
          groupBy?: string
        }
        const q = query({
          resource_class: f.resourceClass,
          hostname: f.host,
          trait: f.trait?.join(','),
          group_by: f.groupBy,
        })
        const body = await apiRequest<{ capacity: Row[] }>(f, 'GET', `/v2/capacity${q}`, {
          version: '2.6',
        })
        if (f.format === 'json') return print(f.format, body as Row, [])
        const bar = process.stdout.isTTY === true
        if (bar) process.stdout.write(`${LEGEND}\n`)
        print(f.format, body.capacity, capacityColumns(f.groupBy, bar))
      }),
    )
}
