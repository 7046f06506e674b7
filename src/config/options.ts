/**
 * Option kinds of the configuration schema: each knows how to turn the raw text of a file line or
 * an environment variable into a typed value, and how to say what it expected when it cannot.
 * Defaults are written as raw text too, so they go through the same parser and `$name`
 * interpolation as operator-supplied values (oslo.config does the same).
 */
import { resolve } from 'node:path'
import { checkDatabaseUrl, checkTransportUrl, redactUrlPassword } from './urls.js'

export type OptionKind =
  | 'int'
  | 'port'
  | 'bool'
  | 'string'
  | 'list'
  | 'url'
  | 'enum'
  | 'path'
  | 'database-url'
  | 'transport-url'

/** What loadConfig knows about the process that computed defaults may use. */
export interface DefaultContext {
  /** The machine's host name (os.hostname() unless injected). */
  hostname: string
}

/** Thrown by `parse`: the caller adds file, section, option and value. */
export class ExpectedError extends Error {}

export interface Option<T> {
  readonly kind: OptionKind
  /** One or two sentences for the sample file and `--help`. */
  readonly help: string
  /** Raw default text (interpolated and parsed like a file value); undefined = unset. */
  readonly default: string | ((ctx: DefaultContext) => string) | undefined
  /** What the sample file shows as the default when `default` is computed. */
  readonly sampleDefault?: string
  /** Never shown: redacted in errors and logs. */
  readonly secret: boolean
  /**
   * Applied by a running service when it reloads its configuration (SIGHUP), as oslo.config's
   * `mutable=True`; any other option that changed is logged as needing a restart (src/main/reload.ts).
   */
  readonly mutable: boolean
  /** The expected form, for messages: `an integer 1-65535`. */
  readonly expected: string
  /** Turns raw text (already interpolated) into the value; throws ExpectedError. `cwd` resolves paths. */
  parse(raw: string, cwd: string): T
  /** The value as it may be shown in a message or a log line. */
  display(raw: string): string
}

/** The value type of an option. */
export type OptionValue<O> = O extends Option<infer T> ? T : never

interface Common {
  help: string
  secret?: boolean
  /** @default false */
  mutable?: boolean
}

function make<T>(
  kind: OptionKind,
  c: Common & { default?: string | ((ctx: DefaultContext) => string); sampleDefault?: string },
  expected: string,
  parse: (raw: string, cwd: string) => T,
  display: (raw: string) => string = (raw) => raw,
): Option<T> {
  const secret = c.secret ?? false
  return {
    kind,
    help: c.help,
    default: c.default,
    ...(c.sampleDefault === undefined ? {} : { sampleDefault: c.sampleDefault }),
    secret,
    mutable: c.mutable ?? false,
    expected,
    parse,
    display: secret ? () => '***' : display,
  }
}

const fail = (expected: string): never => {
  throw new ExpectedError(expected)
}

export function int(c: Common & { default: number; min?: number; max?: number }): Option<number> {
  const { min, max } = c
  const expected =
    min !== undefined && max !== undefined
      ? `an integer ${min}-${max}`
      : min !== undefined
        ? `an integer >= ${min}`
        : max !== undefined
          ? `an integer <= ${max}`
          : 'an integer'
  return make('int', { ...c, default: String(c.default) }, expected, (raw) => {
    const s = raw.trim()
    if (!/^[+-]?\d+$/.test(s)) return fail(expected)
    const n = Number(s)
    if (
      !Number.isSafeInteger(n) ||
      (min !== undefined && n < min) ||
      (max !== undefined && n > max)
    ) {
      return fail(expected)
    }
    return n
  })
}

/** An integer that may be unset (an empty value unsets it); the caller decides what unset means. */
export function optionalInt(
  c: Common & { min?: number; max?: number; sampleDefault?: string },
): Option<number | undefined> {
  const { parse, expected } = int({ ...c, default: 0 })
  return make('int', c, expected, (raw, cwd) => (raw.trim() === '' ? undefined : parse(raw, cwd)))
}

export function port(c: Common & { default: number }): Option<number> {
  return { ...int({ ...c, min: 1, max: 65535 }), kind: 'port' }
}

const TRUE = new Set(['true', 'yes', '1', 'on'])
const FALSE = new Set(['false', 'no', '0', 'off'])

export function bool(c: Common & { default: boolean }): Option<boolean> {
  const expected = 'a boolean (true/false, yes/no, on/off, 1/0)'
  return make('bool', { ...c, default: String(c.default) }, expected, (raw) => {
    const s = raw.trim().toLowerCase()
    if (TRUE.has(s)) return true
    if (FALSE.has(s)) return false
    return fail(expected)
  })
}

/** A string; `default: ''` for an empty default. */
export function str(
  c: Common & { default: string | ((ctx: DefaultContext) => string); sampleDefault?: string },
): Option<string> {
  return make('string', c, 'a string', (raw) => raw)
}

/** A string that may be unset (an empty value unsets it). */
export function optionalStr(c: Common): Option<string | undefined> {
  return make('string', c, 'a string', (raw) => (raw.trim() === '' ? undefined : raw))
}

/** Comma-separated; items are trimmed and empty items dropped. */
export function list(c: Common & { default: readonly string[] }): Option<readonly string[]> {
  return make('list', { ...c, default: c.default.join(',') }, 'a comma-separated list', (raw) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  )
}

/** An http(s) URL that may be unset. */
export function url(c: Common): Option<string | undefined> {
  const expected = 'an http(s) URL such as https://host:port/path'
  return make(
    'url',
    c,
    expected,
    (raw) => {
      const s = raw.trim()
      if (s === '') return undefined
      let u: URL
      try {
        u = new URL(s)
      } catch {
        return fail(expected)
      }
      if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '')
        return fail(expected)
      return s
    },
    redactUrlPassword,
  )
}

export function enumOf<const V extends readonly string[]>(
  values: V,
  c: Common & { default: V[number] },
): Option<V[number]> {
  const expected = `one of ${values.join(', ')}`
  return make('enum', c, expected, (raw) => {
    const s = raw.trim()
    return (values as readonly string[]).includes(s) ? (s as V[number]) : fail(expected)
  })
}

/** A filesystem path, made absolute against the working directory at load time. */
export function path(c: Common & { default: string }): Option<string> {
  return make('path', c, 'a non-empty path', (raw, cwd) => {
    const s = raw.trim()
    if (s === '') return fail('a non-empty path')
    return resolve(cwd, s)
  })
}

/** A filesystem path that may be unset (an empty value unsets it), made absolute like `path`. */
export function optionalPath(c: Common): Option<string | undefined> {
  return make('path', c, 'a path', (raw, cwd) => {
    const s = raw.trim()
    return s === '' ? undefined : resolve(cwd, s)
  })
}

/** `[database] connection`: SQLAlchemy-style URLs for SQLite, PostgreSQL and MySQL/MariaDB. */
export function databaseUrl(c: Common & { default: string }): Option<string> {
  const expected =
    'sqlite:///path, postgresql://user:pass@host:port/db or mysql+pymysql://user:pass@host:port/db'
  return make(
    'database-url',
    c,
    expected,
    (raw) => {
      const s = raw.trim()
      return checkDatabaseUrl(s) ? s : fail(expected)
    },
    redactUrlPassword,
  )
}

/** `[DEFAULT] transport_url`: empty for the in-process bus, or an oslo.messaging rabbit:// URL. */
export function transportUrl(c: Common): Option<string> {
  const expected = 'empty (in-process bus) or rabbit://user:pass@host:port/vhost'
  return make(
    'transport-url',
    { ...c, default: '' },
    expected,
    (raw) => {
      const s = raw.trim()
      return s === '' || checkTransportUrl(s) ? s : fail(expected)
    },
    redactUrlPassword,
  )
}
