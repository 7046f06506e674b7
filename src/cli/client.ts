/**
 * What every client subcommand shares: the client options (`--url`/CYBORG_URL, `--token`/OS_TOKEN,
 * `--os-cacert`/OS_CACERT, `--format`), the action wrapper that turns a failure into one line on stderr and exit code 1,
 * query strings, table columns, and the v2 microversion the client speaks.
 */
import { InvalidArgumentError, Option, type Command } from 'commander'
import { apiRequest, CliError, cutValue, type ClientOptions } from './http.js'
import { print, type Column, type Format } from './output.js'
import { errorMessage } from '../domain/error-message.js'

export interface ClientFlags extends ClientOptions {
  format: Format
}

/** An API object as JSON. */
export type Row = Record<string, unknown>

/** A table column showing one field. */
export const col = (header: string, key: string): Column<Row> => ({ header, value: (r) => r[key] })

/**
 * The newest v2 microversion this client knows, sent on every v2 call: 2.1 lets a bind set the
 * project, 2.2 shows device profiles by name, 2.3/2.4 add device status and lifecycle.
 */
export const V2_VERSION = '2.4'

/** `--timeout`'s default: seconds an API call may take before the command gives up. */
export const DEFAULT_TIMEOUT_S = 30

/**
 * A commander parser for a whole number from `min` to `max` (or one of the words in `also`, such
 * as `auto`); anything else is refused with the range. Returns the text as given.
 */
export function integerIn(min: number, max: number, also: readonly string[] = []) {
  return (value: string): string => {
    if (also.includes(value)) return value
    const n = Number(value)
    if (!/^\d+$/.test(value) || n < min || n > max)
      throw new InvalidArgumentError(
        `expected ${also.map((w) => `${w} or `).join('')}a whole number from ${min} to ${max}`,
      )
    return value
  }
}

/** The largest `--limit` the API takes (its `limit` has at most 9 digits). */
export const MAX_LIMIT = 999_999_999

/** A run of this many characters without a space is an echoed value, not prose: it is cut. */
const RUN_MAX = 200
/** The most characters of an error line, whatever it holds. */
const LINE_MAX = 500

/**
 * A line safe to print: on one line, the password of any URL's userinfo and each of `secrets`
 * (the token) masked as `***`, a run of over 200 characters without a space (a value pasted
 * whole) cut to 64, and the line to 500. Where a message echoes a value, it cuts it itself.
 */
export function safeLine(text: string, secrets: readonly (string | undefined)[] = []): string {
  let line = text.replace(/\s*\n\s*/g, ' ').trim()
  line = line.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*:)[^\s@'"]*@/gi, '$1***@')
  for (const secret of secrets)
    if (secret && secret.length >= 4) line = line.split(secret).join('***')
  line = line.replace(new RegExp(`\\S{${RUN_MAX + 1},}`, 'g'), (run) => cutValue(run))
  return cutValue(line, LINE_MAX)
}

/**
 * Makes every commander error of `root` and its subcommands one line on stderr, e.g.
 * `cyborg: error: unknown option '--fromat' (did you mean --format?); see 'cyborg device list
 * --help'`, instead of the message and the whole usage; values are cut and secrets masked.
 */
export function oneLineErrors(root: Command): void {
  const walk = (command: Command) => {
    const path = ['cyborg', ...commandName(command).split(' ').filter(Boolean)].join(' ')
    command.showHelpAfterError(false).configureOutput({
      outputError: (message, write) => {
        // Commander quotes what it echoes: 'value'.
        const text = message
          .trim()
          .replace(/^error: /, '')
          .replace(/\s*\(Did you mean (.*)\?\)$/, ' (did you mean $1?)')
          .replace(/'([^']{65,})'/g, (_m, value: string) => `'${cutValue(value)}'`)
        write(`cyborg: error: ${safeLine(text, [process.env.OS_TOKEN])}; see '${path} --help'\n`)
      },
    })
    for (const sub of command.commands) walk(sub)
  }
  walk(root)
}

/** Adds the client options to a command. */
export function client(command: Command): Command {
  return command
    .addOption(
      new Option('--url <url>', 'the Cyborg API')
        .env('CYBORG_URL')
        .default('http://127.0.0.1:6666'),
    )
    .addOption(
      new Option('--token <token>', 'a Keystone token, sent as X-Auth-Token').env('OS_TOKEN'),
    )
    .addOption(
      new Option(
        '--os-cacert <file>',
        'PEM CA certificate(s) to trust for an https --url (a private CA)',
      ).env('OS_CACERT'),
    )
    .addOption(
      new Option('--format <format>', 'table for people, json for scripts')
        .choices(['table', 'json'])
        .default('table'),
    )
    .addOption(
      new Option('--timeout <seconds>', 'give up on an API call not answered within this (1-3600)')
        .env('CYBORG_TIMEOUT')
        .default(DEFAULT_TIMEOUT_S)
        .argParser((value: string) => Number(integerIn(1, 3600)(value))),
    )
}

/** `accelerator show`, `attach-instance`: the command's words below the program. */
function commandName(command: Command): string {
  const words: string[] = []
  for (let c: Command | null = command; c?.parent; c = c.parent) words.unshift(c.name())
  return words.join(' ')
}

/**
 * Runs a command's body; a failure is one line on stderr and exit code 1. The body gets the flags
 * and the positional arguments (a variadic argument's values are spread into the list).
 */
export function action<F extends ClientFlags = ClientFlags>(
  body: (flags: F, args: string[]) => Promise<void>,
) {
  return async (...params: unknown[]) => {
    const command = params.at(-1) as Command
    const args = params
      .slice(0, -2)
      .flat()
      .filter((p): p is string => typeof p === 'string')
    const flags = command.opts<F>()
    try {
      await body(flags, args)
    } catch (err) {
      const line = safeLine(errorMessage(err), [flags.token])
      process.stderr.write(`cyborg ${commandName(command)}: ${line}\n`)
      process.exitCode = 1
    }
  }
}

/** `?a=1&b=2` from the values that are set, or ''. */
export function query(values: Record<string, string | undefined>): string {
  const params = new URLSearchParams(
    Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined),
  )
  const text = params.toString()
  return text ? `?${text}` : ''
}

/** A progress line for people: only on a terminal and only for tables, so scripts see clean output. */
export function progress(flags: ClientFlags, line: string): void {
  if (flags.format === 'table' && process.stderr.isTTY) process.stderr.write(`${line}\n`)
}

/** Parses a JSON option or argument; a mistake names the option and says what to send. */
export function parseJson(name: string, text: string, example: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw new CliError(`${name} is not valid JSON (${errorMessage(err)}); expected e.g. ${example}`)
  }
}

/**
 * Deletes each value on its own (`DELETE <pathOf(value)>`), prints the ones deleted, and fails
 * with one line naming every one that was not.
 */
export async function deleteEach(
  flags: ClientFlags,
  values: string[],
  pathOf: (value: string) => string,
  version?: string,
): Promise<void> {
  const deleted: string[] = []
  const failed: string[] = []
  for (const value of values) {
    try {
      await apiRequest(flags, 'DELETE', pathOf(value), { version })
      deleted.push(value)
    } catch (err) {
      if (!(err instanceof CliError)) throw err
      failed.push(err.message)
    }
  }
  print(
    flags.format,
    deleted.map((value) => ({ deleted: value })),
    [col('Deleted', 'deleted')],
  )
  if (failed.length > 0)
    throw new CliError(`${failed.length} of ${values.length} not deleted: ${failed.join('; ')}`)
}
