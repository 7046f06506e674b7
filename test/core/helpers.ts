/** Shared bits of the core tests: a logger that remembers, table dumps, and polling. */
import type { DatabaseHandle } from '../../src/db/core/connection.js'
import type { Logger } from '../../src/domain/logger.js'

export interface LogLine {
  level: 'error' | 'warn' | 'info' | 'debug'
  msg: string
  obj: object | undefined
}

/** A Logger that records every line (children share the record). */
export function recordingLogger(lines: LogLine[] = []): Logger & { lines: LogLine[] } {
  const at = (level: LogLine['level']) => (first: object | string, msg?: unknown) => {
    if (typeof first === 'string') lines.push({ level, msg: first, obj: undefined })
    else lines.push({ level, msg: typeof msg === 'string' ? msg : '', obj: first })
  }
  const log = {
    lines,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: () => log,
  }
  return log
}

/** Every row of the inventory and services tables, in id order: equal dumps mean nothing was written. */
export async function dumpTables(handle: DatabaseHandle) {
  const { db } = handle
  return {
    devices: await db.selectFrom('devices').selectAll().orderBy('id').execute(),
    deployables: await db.selectFrom('deployables').selectAll().orderBy('id').execute(),
    attributes: await db.selectFrom('attributes').selectAll().orderBy('id').execute(),
    handles: await db.selectFrom('attach_handles').selectAll().orderBy('id').execute(),
    services: await db.selectFrom('services').selectAll().orderBy('id').execute(),
  }
}

/** Polls `check` until it returns a value other than undefined/false. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
