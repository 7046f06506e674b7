/**
 * The parsed form of an oslo.policy rule and its evaluation. A rule is a tree of checks:
 * `@` and `""` (always), `!` (never), `rule:NAME`, `role:X`, `<credential>:<match>` and
 * `<literal>:<match>`, joined by `and`, `or`, `not`. The semantics follow oslo.policy's
 * `_checks.py`: role names compare case-insensitively, a credential that is a list matches when
 * any element does, and a `%(attr)s` the target lacks makes the check false.
 */

/** A node of a parsed rule. */
export type Check =
  | { readonly kind: 'true' }
  | { readonly kind: 'false' }
  | { readonly kind: 'rule'; readonly name: string }
  | { readonly kind: 'role'; readonly match: string }
  /** `left:match`: `left` is a credential path (`project_id`, `a.b`) or a Python literal (`'x'`, `True`). */
  | { readonly kind: 'generic'; readonly left: GenericLeft; readonly match: string }
  | { readonly kind: 'not'; readonly check: Check }
  | { readonly kind: 'and'; readonly checks: readonly Check[] }
  | { readonly kind: 'or'; readonly checks: readonly Check[] }

export type GenericLeft =
  | { readonly type: 'credential'; readonly path: readonly string[]; readonly text: string }
  | { readonly type: 'literal'; readonly value: string; readonly text: string }

/** What a caller brings: `user_id`, `project_id`, `roles`, `is_admin`, `service_roles`, … */
export type Credentials = Readonly<Record<string, unknown>>
/** What the caller acts on: `project_id`, `user_id` of the resource. */
export type Target = Readonly<Record<string, unknown>>

/** Python's `str()` of a value, as oslo.policy compares everything as text. */
export function pyStr(value: unknown): string {
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  return JSON.stringify(value)
}

/** A flat key first (`target.role.name` as one key), then a dotted path through nested objects. */
function lookup(
  source: Readonly<Record<string, unknown>>,
  key: string,
): { found: boolean; value: unknown } {
  if (Object.hasOwn(source, key)) return { found: true, value: source[key] }
  let cur: unknown = source
  for (const part of key.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part))
      return { found: false, value: undefined }
    cur = (cur as Record<string, unknown>)[part]
  }
  return { found: true, value: cur }
}

const INTERPOLATION = /%\(([^()]+)\)s|%%/g

/** `match % target` in Python; undefined when the target lacks a key (oslo: the check is false). */
export function interpolate(match: string, target: Target): string | undefined {
  let missing = false
  const out = match.replace(INTERPOLATION, (whole, key: string | undefined) => {
    if (key === undefined) return '%'
    const hit = lookup(target, key)
    if (!hit.found) missing = true
    return pyStr(hit.value)
  })
  return missing ? undefined : out
}

/** Evaluates a check. `rule` resolves `rule:NAME` (the rule set guarantees every name exists). */
export function evaluate(
  check: Check,
  creds: Credentials,
  target: Target,
  rule: (name: string) => Check,
): boolean {
  switch (check.kind) {
    case 'true':
      return true
    case 'false':
      return false
    case 'rule':
      return evaluate(rule(check.name), creds, target, rule)
    case 'not':
      return !evaluate(check.check, creds, target, rule)
    case 'and':
      return check.checks.every((c) => evaluate(c, creds, target, rule))
    case 'or':
      return check.checks.some((c) => evaluate(c, creds, target, rule))
    case 'role': {
      const wanted = interpolate(check.match, target)
      if (wanted === undefined) return false
      const roles = creds['roles']
      if (!Array.isArray(roles)) return false
      return roles.some((r) => pyStr(r).toLowerCase() === wanted.toLowerCase())
    }
    case 'generic': {
      const wanted = interpolate(check.match, target)
      if (wanted === undefined) return false
      if (check.left.type === 'literal') return check.left.value === wanted
      const hit = lookup(creds, check.left.path.join('.'))
      if (!hit.found) return false
      if (Array.isArray(hit.value)) return hit.value.some((v) => pyStr(v) === wanted)
      return pyStr(hit.value) === wanted
    }
  }
}

/** The rule text of a check, parenthesised where needed; parsing it gives back an equal check. */
export function renderCheck(check: Check): string {
  switch (check.kind) {
    case 'true':
      return '@'
    case 'false':
      return '!'
    case 'rule':
      return `rule:${check.name}`
    case 'role':
      return `role:${check.match}`
    case 'generic':
      return `${check.left.text}:${check.match}`
    case 'not':
      return `not ${wrap(check.check, 'not')}`
    case 'and':
      return check.checks.map((c) => wrap(c, 'and')).join(' and ')
    case 'or':
      return check.checks.map((c) => wrap(c, 'or')).join(' or ')
  }
}

function wrap(check: Check, parent: 'not' | 'and' | 'or'): string {
  const text = renderCheck(check)
  const needs =
    check.kind === 'or' ? parent !== 'or' : check.kind === 'and' ? parent === 'not' : false
  return needs ? `(${text})` : text
}

/** Every `rule:NAME` a check refers to. */
export function ruleReferences(check: Check): string[] {
  switch (check.kind) {
    case 'rule':
      return [check.name]
    case 'not':
      return ruleReferences(check.check)
    case 'and':
    case 'or':
      return check.checks.flatMap(ruleReferences)
    case 'true':
    case 'false':
    case 'role':
    case 'generic':
      return []
  }
}
