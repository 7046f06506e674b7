/**
 * What changed between two loads of the configuration, option by option, and whether each option is
 * mutable (applied by a reload) or needs a restart: oslo.config's `_diff_ns` and its
 * "Ignoring change to immutable option" warning, as data for src/main/reload.ts to act on and log.
 */
import { redactConfig, type Config, type SectionName } from './config.js'
import type { Option } from './options.js'
import { schema } from './schema.js'

/** One option whose value differs. */
export interface OptionChange {
  readonly section: SectionName
  readonly name: string
  /** Applied by a reload (the option's `mutable`); false: the running value stays until a restart. */
  readonly mutable: boolean
  /** The values as they may be shown: secrets as `***`, URL passwords masked. */
  readonly from: unknown
  readonly to: unknown
}

/** The options whose values differ between `before` and `after`, in schema order. */
export function diffConfig(before: Config, after: Config): OptionChange[] {
  const shownBefore = redactConfig(before)
  const shownAfter = redactConfig(after)
  const changes: OptionChange[] = []
  for (const section of Object.keys(schema) as SectionName[]) {
    const options = schema[section] as Record<string, Option<unknown>>
    const a = before[section] as Record<string, unknown>
    const b = after[section] as Record<string, unknown>
    for (const [name, opt] of Object.entries(options)) {
      if (sameValue(a[name], b[name])) continue
      changes.push({
        section,
        name,
        mutable: opt.mutable,
        from: shownBefore[section]?.[name],
        to: shownAfter[section]?.[name],
      })
    }
  }
  return changes
}

/** The `[section] name` label of a change, as messages write it. */
export function changeLabel(change: Pick<OptionChange, 'section' | 'name'>): string {
  return `[${change.section}] ${change.name}`
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => v === b[i])
  return a === b
}
