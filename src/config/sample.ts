/**
 * Renders etc/cyborg.conf.sample from the schema: every option commented out with its help, its
 * expected form and its default. `cyborg config sample` prints it; a test checks that the shipped
 * file is current.
 */
import type { Option } from './options.js'
import { schema } from './schema.js'
import { DEFAULT_CONFIG_FILE } from './config.js'

const WIDTH = 79

const HEADER =
  `Sample configuration for Cyborg.

Generated from src/config/schema.ts by \`cyborg config sample\`; do not edit by hand.
Every option is shown commented out with its default.

Files given with --config-file (default ${DEFAULT_CONFIG_FILE} if it exists) are read in order, a later file overriding an earlier one. ` +
  `Environment variables CYBORG_<SECTION>__<OPTION> override every file, e.g. CYBORG_API__PORT=6667 or CYBORG_DEFAULT__DEBUG=true. ` +
  `A value may refer to another option as $name, \${name} or \${section.name}; write $$ for a literal $. Unknown sections and options are errors.`

/** The sample file's text, ending with a newline. */
export function renderSample(): string {
  const out: string[] = HEADER.split('\n').flatMap((p) => (p === '' ? ['#'] : comment(p)))
  for (const [section, options] of Object.entries(schema)) {
    out.push('', `[${section}]`)
    for (const [name, opt] of Object.entries(options) as [string, Option<unknown>][]) {
      const expected = opt.kind === 'string' ? [] : [`Expected: ${opt.expected}.`]
      const notes = [
        ...expected,
        ...(opt.secret ? ['Secret: never logged.'] : []),
        ...(opt.mutable ? ['Mutable: a reload (SIGHUP) applies it without a restart.'] : []),
      ]
      out.push('', ...comment(opt.help))
      if (notes.length > 0) out.push(...comment(notes.join(' ')))
      out.push(`#${name} = ${sampleDefault(opt)}`.trimEnd())
    }
  }
  return `${out.join('\n')}\n`
}

function sampleDefault(opt: Option<unknown>): string {
  if (opt.sampleDefault !== undefined) return opt.sampleDefault
  return typeof opt.default === 'string' ? opt.default : ''
}

/** Wraps text into `# ` lines of at most WIDTH columns. */
function comment(text: string): string[] {
  const lines: string[] = []
  let line = '#'
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > WIDTH && line !== '#') {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  lines.push(line)
  return lines
}
