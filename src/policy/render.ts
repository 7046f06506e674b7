/**
 * The rules as people read them: `cyborg policy list` (YAML that can be pasted into policy.yaml,
 * or JSON) and the rule table of docs/policy.md.
 */
import type { RuleDefault } from './base-rules.js'
import type { EffectiveRule } from './enforcer.js'

const q = (s: string) => JSON.stringify(s)

/** Every rule as commented YAML: description, operations, where the value comes from, then `"name": "rule"`. */
export function renderPolicyText(rules: readonly EffectiveRule[]): string {
  const out: string[] = []
  for (const r of rules) {
    out.push(`# ${r.description}`)
    for (const op of r.operations) out.push(`# ${op.method} ${op.path}`)
    if (r.custom) out.push(`# (defined only in ${r.overriddenIn ?? 'the policy file'})`)
    else if (r.overriddenIn !== undefined)
      out.push(`# (overridden in ${r.overriddenIn}; default: ${q(r.defaultCheckStr ?? '')})`)
    else out.push('# (default)')
    out.push(`${q(r.name)}: ${q(r.checkStr)}`, '')
  }
  return out.join('\n')
}

/** Every rule as JSON: name, value in force, default, whether and where overridden, description, operations. */
export function renderPolicyJson(rules: readonly EffectiveRule[]): string {
  const list = rules.map((r) => ({
    name: r.name,
    rule: r.checkStr,
    default: r.defaultCheckStr ?? null,
    overridden: r.overriddenIn !== undefined,
    source: r.overriddenIn ?? 'default',
    description: r.description,
    operations: r.operations,
    scope_types: r.scopeTypes,
  }))
  return `${JSON.stringify(list, null, 2)}\n`
}

/** The Markdown table of docs/policy.md, one row per rule. */
export function renderRulesMarkdown(rules: readonly RuleDefault[]): string {
  const cell = (s: string) => s.replaceAll('|', '\\|')
  const rows = rules.map((r) => {
    const ops = r.operations.map((o) => `\`${o.method} ${o.path}\``).join('<br>')
    const legacy = r.deprecatedRule ? ` (before 2026: \`${r.deprecatedRule}\`)` : ''
    return `| \`${r.name}\` | \`${cell(r.checkStr)}\`${legacy} | ${cell(r.description)} | ${ops} |`
  })
  return [
    '| rule | default | what it is | guards |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n')
}
