/**
 * Loads cyborg.conf the way oslo.config does, validates it once against the schema, and returns a
 * deep-frozen `Config` that callers pass down explicitly (there is no global).
 *
 * Precedence, lowest first: built-in defaults, each `files` entry in order (a later file overrides
 * an earlier one), then `CYBORG_<SECTION>__<OPTION>` environment variables. Values may refer to
 * other options as `$name`, `${name}` or `${section.name}` (`$$` is a literal `$`); a bare name is
 * looked up in the same section first, then in [DEFAULT].
 */
import { existsSync, readFileSync } from 'node:fs'
import os from 'node:os'
import { ConfigError } from '../domain/errors.js'
import { parseIni } from './ini.js'
import { ExpectedError, type DefaultContext, type Option } from './options.js'
import { schema, type Config, type SectionName } from './schema.js'

export type { Config, SectionName } from './schema.js'

/** Read when no `--config-file` is given, if it exists. */
export const DEFAULT_CONFIG_FILE = '/etc/cyborg/cyborg.conf'

/** Environment variables `CYBORG_<SECTION>__<OPTION>` override files. */
export const ENV_PREFIX = 'CYBORG_'

/**
 * The files to read: those given with `--config-file`, or else DEFAULT_CONFIG_FILE when it exists,
 * or else none (built-in defaults and the environment only).
 */
export function resolveConfigFiles(
  given: readonly string[],
  exists: (path: string) => boolean = existsSync,
): string[] {
  if (given.length > 0) return [...given]
  return exists(DEFAULT_CONFIG_FILE) ? [DEFAULT_CONFIG_FILE] : []
}

export interface LoadConfigOptions {
  /** INI files, lowest precedence first. Every one must exist. */
  files: readonly string[]
  /** Usually `process.env`. */
  env: Readonly<Record<string, string | undefined>>
  /** @default os.hostname() */
  hostname?: string
  /** Base of relative paths. @default process.cwd() */
  cwd?: string
}

/** Where one option's value came from, and how it may be shown. */
interface Origin {
  /** `cyborg.conf:3`, `CYBORG_API__PORT` or `built-in default`. */
  source: string
  /** The raw value as written, secrets redacted. */
  display: string
}

interface Raw {
  raw: string
  source: string
}

const origins = new WeakMap<object, { files: readonly string[]; options: Map<string, Origin> }>()
const sectionNames = Object.keys(schema) as SectionName[]
const optionOf = (section: SectionName, name: string): Option<unknown> | undefined =>
  Object.hasOwn(schema[section], name)
    ? (schema[section] as Record<string, Option<unknown>>)[name]
    : undefined
const isSection = (name: string): name is SectionName => Object.hasOwn(schema, name)

/**
 * Reads, merges, validates and freezes the configuration.
 * @throws ConfigError with a one-line message naming the file (or env var), section, option,
 *   the offending value (secrets redacted) and the expected form
 */
export function loadConfig(options: LoadConfigOptions): Config {
  const ctx: DefaultContext = { hostname: options.hostname ?? os.hostname() }
  const cwd = options.cwd ?? process.cwd()
  const raws = new Map<string, Raw>()

  for (const file of options.files) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      throw new ConfigError(`${file}: cannot read config file: ${e.code ?? e.message}`, {
        cause: err,
      })
    }
    const doc = parseIni(text, file)
    for (const { name, line } of doc.sections) {
      if (!isSection(name)) throw unknownSection(`${file}:${line}`, name)
    }
    for (const { section, name, value, line } of doc.entries) {
      const s = section as SectionName
      if (!optionOf(s, name)) throw unknownOption(`${file}:${line}`, s, name)
      raws.set(`${s}.${name}`, { raw: value, source: `${file}:${line}` })
    }
  }

  for (const [key, value] of Object.entries(options.env)) {
    if (value === undefined || !key.startsWith(ENV_PREFIX)) continue
    const rest = key.slice(ENV_PREFIX.length)
    const split = rest.indexOf('__')
    if (split < 0) continue
    const sectionPart = rest.slice(0, split)
    const section = sectionPart.toUpperCase() === 'DEFAULT' ? 'DEFAULT' : sectionPart.toLowerCase()
    const name = rest.slice(split + 2).toLowerCase()
    if (!isSection(section)) throw unknownSection(key, section)
    if (!optionOf(section, name)) throw unknownOption(key, section, name)
    raws.set(`${section}.${name}`, { raw: value, source: key })
  }

  const values = new Map<string, unknown>()
  const originMap = new Map<string, Origin>()
  const resolving: string[] = []

  const resolve = (section: SectionName, name: string): unknown => {
    const key = `${section}.${name}`
    if (values.has(key)) return values.get(key)
    const opt = optionOf(section, name) as Option<unknown>
    const given = raws.get(key)
    const def = typeof opt.default === 'function' ? opt.default(ctx) : opt.default
    const raw: Raw | undefined =
      given ?? (def === undefined ? undefined : { raw: def, source: 'built-in default' })
    if (raw === undefined) {
      values.set(key, undefined)
      return undefined
    }
    const origin: Origin = { source: raw.source, display: opt.display(raw.raw) }
    originMap.set(key, origin)
    if (resolving.includes(key)) {
      const chain = [...resolving.slice(resolving.indexOf(key)), key].map(label).join(' -> ')
      throw problem(origin, section, name, `circular $-reference ${chain}`)
    }
    resolving.push(key)
    try {
      const expanded = interpolate(raw.raw, (ref) => {
        const target = lookup(section, ref)
        if (target === undefined) {
          const what = opt.secret ? 'an unknown $-reference' : `unknown reference $${ref}`
          throw problem(origin, section, name, `${what} (write $$ for a literal $)`)
        }
        return stringify(resolve(target[0], target[1]))
      })
      let value: unknown
      try {
        value = opt.parse(expanded, cwd)
      } catch (err) {
        if (!(err instanceof ExpectedError)) throw err
        const shown =
          expanded === raw.raw || opt.secret ? '' : ` (expands to "${opt.display(expanded)}")`
        throw problem(origin, section, name, `expected ${err.message}`, shown)
      }
      values.set(key, value)
      return value
    } finally {
      resolving.pop()
    }
  }

  const config: Record<string, Record<string, unknown>> = {}
  for (const section of sectionNames) {
    config[section] = {}
    for (const name of Object.keys(schema[section])) config[section][name] = resolve(section, name)
  }
  checkAuth(config, originMap)
  checkApiTimeouts(config.api ?? {}, originMap)
  const frozen = deepFreeze(config) as unknown as Config
  origins.set(frozen, { files: [...options.files], options: originMap })
  return frozen
}

/** Where an option's value came from: `cyborg.conf:3`, `CYBORG_API__PORT` or `built-in default`. */
export function optionSource(config: Config, section: SectionName, name: string): string {
  return origins.get(config)?.options.get(`${section}.${name}`)?.source ?? 'built-in default'
}

/** The files that were read, lowest precedence first. */
export function configFiles(config: Config): readonly string[] {
  return origins.get(config)?.files ?? []
}

/**
 * A ConfigError about an option whose value is well-formed but unusable (an unknown driver name, a
 * transport that is not supported yet), in the same one-line shape as loadConfig's own errors.
 */
export function optionError(
  config: Config,
  section: SectionName,
  name: string,
  message: string,
): ConfigError {
  const origin = origins.get(config)?.options.get(`${section}.${name}`) ?? {
    source: 'built-in default',
    display: '',
  }
  return problem(origin, section, name, message)
}

/** The configuration as a plain object with secrets replaced by `***` and URL passwords masked, for logs. */
export function redactConfig(config: Config): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {}
  for (const section of sectionNames) {
    out[section] = {}
    for (const [name, opt] of Object.entries(schema[section]) as [string, Option<unknown>][]) {
      const value = (config[section] as Record<string, unknown>)[name]
      out[section][name] =
        value === undefined
          ? undefined
          : opt.secret
            ? '***'
            : typeof value === 'string'
              ? opt.display(value)
              : value
    }
  }
  return out
}

function label(key: string): string {
  const [section, name] = key.split('.')
  return `[${section}] ${name}`
}

function problem(
  origin: Origin,
  section: string,
  name: string,
  message: string,
  suffix = '',
): ConfigError {
  return new ConfigError(
    `${origin.source}: [${section}] ${name} = "${origin.display}"${suffix}: ${message}`,
    {
      details: { source: origin.source, section, option: name },
    },
  )
}

function unknownSection(source: string, section: string): ConfigError {
  return new ConfigError(
    `${source}: [${section}]: unknown section; expected one of ${sectionNames.join(', ')}`,
    { details: { source, section } },
  )
}

function unknownOption(source: string, section: SectionName, name: string): ConfigError {
  const known = Object.keys(schema[section])
  const close = known.find(
    (k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2,
  )
  const hint = close ? `did you mean ${close}?` : `options of [${section}] are ${known.join(', ')}`
  // The value is not shown: an unknown option might be somebody's password.
  return new ConfigError(`${source}: [${section}] ${name}: unknown option; ${hint}`, {
    details: { source, section, option: name },
  })
}

/** Python string.Template rules as oslo.config uses them: `$$`, `$name`, `${name}`; names may hold dots. */
function interpolate(raw: string, get: (ref: string) => string): string {
  return raw.replace(
    /\$(?:(\$)|\{([_a-z][._a-z0-9]*)\}|([_a-z][._a-z0-9]*))/gi,
    (match, dollar, braced, bare) => (dollar ? '$' : get((braced ?? bare) as string)),
  )
}

function lookup(section: SectionName, ref: string): [SectionName, string] | undefined {
  const dot = ref.indexOf('.')
  if (dot >= 0) {
    const s = ref.slice(0, dot)
    const n = ref.slice(dot + 1)
    return isSection(s) && optionOf(s, n) ? [s, n] : undefined
  }
  if (optionOf(section, ref)) return [section, ref]
  if (optionOf('DEFAULT', ref)) return ['DEFAULT', ref]
  return undefined
}

function stringify(value: unknown): string {
  if (value === undefined) return ''
  if (Array.isArray(value)) return value.join(',')
  return String(value)
}

/** keystoneauth needs more than auth_type: fail at start, not at the first outbound call. */
function checkAuth(
  config: Record<string, Record<string, unknown>>,
  originMap: Map<string, Origin>,
): void {
  for (const section of ['placement', 'nova'] as const) {
    const c = config[section] ?? {}
    const needs =
      c.auth_type === 'password'
        ? ['auth_url', 'username', 'password']
        : c.auth_type === 'admin_token'
          ? ['endpoint_override', 'token']
          : []
    const missing = needs.filter((n) => c[n] === undefined)
    if (missing.length > 0) {
      const origin = originMap.get(`${section}.auth_type`) ?? {
        source: 'built-in default',
        display: '',
      }
      throw problem(
        origin,
        section,
        'auth_type',
        `expected ${needs.join(', ')} to be set in [${section}] too (missing: ${missing.join(', ')})`,
      )
    }
  }
}

/** The API's time limits must nest, or a shorter one silently overrides a longer one (or Node refuses to listen). */
function checkApiTimeouts(api: Record<string, unknown>, originMap: Map<string, Origin>): void {
  const pairs = [
    ['headers_timeout', 'request_timeout', 'at most'],
    // The handler's clock starts before the body is read: a slow upload must get request_timeout's 408.
    ['request_timeout', 'handler_timeout', 'below'],
    ['handler_timeout', 'client_socket_timeout', 'below'],
  ] as const
  for (const [shorter, longer, relation] of pairs) {
    const a = api[shorter] as number
    const b = api[longer] as number
    if (relation === 'at most' ? a > b : a >= b) {
      const origin = originMap.get(`api.${shorter}`) ?? {
        source: 'built-in default',
        display: String(a),
      }
      throw problem(origin, 'api', shorter, `expected ${relation} [api] ${longer} (${b})`)
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0] as number
    d[0] = i
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j] as number
      d[j] = Math.min(
        (d[j] as number) + 1,
        (d[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
      prev = tmp
    }
  }
  return d[b.length] as number
}
