/** Output of the client commands: a table for people, or JSON (`--format json`) for scripts. */

export type Format = 'table' | 'json'

export interface Column<T> {
  header: string
  value: (row: T) => unknown
}

const text = (v: unknown): string =>
  v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)

/** Renders rows under headers, columns padded to their widest cell. */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((c) => text(c.value(row))))
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)))
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return (
    [
      line(columns.map((c) => c.header)),
      line(widths.map((w) => '-'.repeat(w))),
      ...cells.map(line),
    ].join('\n') + '\n'
  )
}

/** One object as two columns, field and value. */
export function renderRecord(record: Record<string, unknown>): string {
  return renderTable(Object.entries(record), [
    { header: 'Field', value: ([k]) => k },
    { header: 'Value', value: ([, v]) => v },
  ])
}

export function print<T>(format: Format, data: T[] | T, columns: readonly Column<T>[]): void {
  if (format === 'json') process.stdout.write(`${JSON.stringify(data, null, 2)}\n`)
  else if (Array.isArray(data)) process.stdout.write(renderTable(data, columns))
  else process.stdout.write(renderRecord(data as Record<string, unknown>))
}
