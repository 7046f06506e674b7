/**
 * Renders the effective configuration as INI (`cyborg config show`): every option with its value
 * after files, environment and interpolation, a comment naming where non-default values came
 * from, and secrets replaced by `***`.
 */
import { optionSource, redactConfig, type Config } from './config.js'
import { schema } from './schema.js'

export function renderEffective(config: Config): string {
  const redacted = redactConfig(config)
  const out: string[] = []
  for (const [section, options] of Object.entries(schema)) {
    out.push(`[${section}]`)
    for (const name of Object.keys(options)) {
      const source = optionSource(config, section as keyof Config, name)
      if (source !== 'built-in default') out.push(`# from ${source}`)
      const value = redacted[section]?.[name]
      const text =
        value === undefined ? '' : Array.isArray(value) ? value.join(', ') : String(value)
      out.push(`${name} = ${text}`.trimEnd())
    }
    out.push('')
  }
  return out.join('\n')
}
