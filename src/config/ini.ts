/**
 * An oslo.config-compatible INI reader. It keeps line numbers for error messages and, like oslo
 * (and unlike the `ini` package), never strips inline comments or coerces types: a password may
 * contain `#` or `;`, and `true` stays the string "true" until the schema types it.
 *
 * Syntax: `[section]`; `name = value` or `name: value`; a line starting with whitespace continues
 * the previous value (joined with a newline); full-line comments start with `#` or `;`; a value in
 * matching single or double quotes loses the quotes.
 */
import { ConfigError } from '../domain/errors.js'

/** One `name = value` line, with where it came from. */
export interface IniEntry {
  section: string
  name: string
  value: string
  /** 1-based line of the `name = value` line. */
  line: number
}

/** A `[section]` header, with where it came from (empty sections must still be validated). */
export interface IniSection {
  name: string
  line: number
}

export interface IniDocument {
  sections: IniSection[]
  /** In file order; a later entry for the same option overrides an earlier one. */
  entries: IniEntry[]
}

/**
 * Parses INI text. `source` names the file in errors (`cyborg.conf:3: …`).
 * @throws ConfigError for a line that is neither a section, an option, a comment nor a continuation
 */
export function parseIni(text: string, source: string): IniDocument {
  const sections: IniSection[] = []
  const entries: IniEntry[] = []
  let section: string | undefined
  let last: IniEntry | undefined
  const lines = text.split(/\r?\n/)
  for (const [index, raw] of lines.entries()) {
    const line = index + 1
    const trimmed = raw.trim()
    if (trimmed === '') {
      last = undefined
      continue
    }
    if (/^\s/.test(raw) && last !== undefined && !/^[#;]/.test(trimmed)) {
      last.value = `${last.value}\n${trimmed}`
      continue
    }
    if (/^[#;]/.test(trimmed)) continue
    last = undefined
    const header = /^\[([^\]]*)\]$/.exec(trimmed)
    if (header) {
      section = (header[1] ?? '').trim()
      if (section === '') throw new ConfigError(`${source}:${line}: empty section name "[]"`)
      sections.push({ name: section, line })
      continue
    }
    const sep = trimmed.search(/[=:]/)
    if (sep <= 0) {
      // The line is not echoed: it may hold a secret.
      throw new ConfigError(
        `${source}:${line}: cannot parse line: expected "[section]" or "option = value"`,
      )
    }
    if (section === undefined) {
      throw new ConfigError(
        `${source}:${line}: option outside any section: expected a "[section]" line first`,
      )
    }
    const name = trimmed.slice(0, sep).trim()
    const value = unquote(trimmed.slice(sep + 1).trim())
    last = { section, name, value, line }
    entries.push(last)
  }
  return { sections, entries }
}

function unquote(value: string): string {
  if (value.length >= 2) {
    const q = value[0]
    if ((q === '"' || q === "'") && value.endsWith(q)) return value.slice(1, -1)
  }
  return value
}
