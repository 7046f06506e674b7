/**
 * The oslo.policy rule language, parsed: tokens are split on whitespace, with leading `(` and
 * trailing `)` peeled off each one (so `%(project_id)s` keeps its parentheses), as oslo.policy's
 * `_parser.py` does. Precedence is `not` over `and` over `or`; the keywords are case-insensitive.
 * Unlike oslo.policy, which turns a rule it cannot parse into "never" and logs, a bad rule is an
 * error naming the rule and the column, so that a typo in policy.yaml stops start-up.
 */
import { ConfigError } from '../domain/errors.js'
import type { Check, GenericLeft } from './check.js'

/** A rule that cannot be parsed, a `rule:` reference to an unknown rule, or a cycle of rules. */
export class PolicySyntaxError extends ConfigError {
  constructor(
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, { code: 'POLICY_SYNTAX', ...options })
  }
}

type Token =
  | { type: '(' | ')' | 'and' | 'or' | 'not'; col: number; text: string }
  | { type: 'check'; col: number; text: string; check: Check }

function fail(rule: string, problem: string, col?: number): never {
  const where = col === undefined ? '' : ` at column ${col}`
  throw new PolicySyntaxError(`policy rule "${rule}": ${problem}${where}`, {
    details: { rule, ...(col === undefined ? {} : { column: col }) },
  })
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_:.-]*$/
const CREDENTIAL = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/
const GOOD_INTERPOLATION = /%\([^()%]+\)s|%%/g

function checkMatch(rule: string, match: string, col: number): void {
  if (match === '') fail(rule, 'nothing after ":"', col)
  const rest = match.replace(GOOD_INTERPOLATION, '')
  if (/[%()]/.test(rest))
    fail(rule, `bad "${match}": only %(name)s substitutions may use "%", "(" or ")"`, col)
}

/** The left side of `left:match`: a Python literal (as ast.literal_eval reads it) or a credential path. */
function parseLeft(rule: string, text: string, col: number): GenericLeft {
  const quoted = /^'([^']*)'$/.exec(text) ?? /^"([^"]*)"$/.exec(text)
  if (quoted) return { type: 'literal', value: quoted[1] ?? '', text }
  if (text === 'True' || text === 'False' || text === 'None')
    return { type: 'literal', value: text, text }
  if (/^-?(0|[1-9][0-9]*)$/.test(text))
    return { type: 'literal', value: String(BigInt(text)), text }
  if (!CREDENTIAL.test(text))
    fail(rule, `"${text}" is neither a credential name nor a quoted literal`, col)
  return { type: 'credential', path: text.split('.'), text }
}

function parseCheck(rule: string, text: string, col: number): Check {
  if (text === '@') return { kind: 'true' }
  if (text === '!') return { kind: 'false' }
  if (/^(['"]).*\1$/.test(text) && text.length >= 2)
    fail(rule, `a quoted string (${text}) is not a check`, col)
  const colon = text.indexOf(':')
  if (colon < 0) fail(rule, `"${text}" is not a check (expected kind:match, @ or !)`, col)
  const kind = text.slice(0, colon)
  const match = text.slice(colon + 1)
  if (kind === '') fail(rule, `nothing before ":" in "${text}"`, col)
  switch (kind) {
    case 'rule':
      if (!NAME.test(match)) fail(rule, `"${match}" is not a rule name`, col)
      return { kind: 'rule', name: match }
    case 'role':
      checkMatch(rule, match, col)
      return { kind: 'role', match }
    case 'http':
    case 'https':
      return fail(rule, `${kind}: checks (a remote policy server) are not supported`, col)
    default:
      checkMatch(rule, match, col)
      return { kind: 'generic', left: parseLeft(rule, kind, col), match }
  }
}

function tokenize(rule: string, text: string): Token[] {
  const tokens: Token[] = []
  for (const m of text.matchAll(/\S+/g)) {
    const chunk = m[0]
    let start = 0
    let end = chunk.length
    const base = m.index + 1
    for (; start < end && chunk[start] === '('; start++)
      tokens.push({ type: '(', col: base + start, text: '(' })
    const closing: Token[] = []
    for (; end > start && chunk[end - 1] === ')'; end--)
      closing.unshift({ type: ')', col: base + end - 1, text: ')' })
    if (end > start) {
      const middle = chunk.slice(start, end)
      const lower = middle.toLowerCase()
      if (lower === 'and' || lower === 'or' || lower === 'not')
        tokens.push({ type: lower, col: base + start, text: middle })
      else
        tokens.push({
          type: 'check',
          col: base + start,
          text: middle,
          check: parseCheck(rule, middle, base + start),
        })
    }
    tokens.push(...closing)
  }
  return tokens
}

/**
 * Parses one rule. `""` (or only spaces) is "always", as in oslo.policy.
 * @throws PolicySyntaxError naming `name` and the column.
 */
export function parseRule(name: string, text: string): Check {
  const tokens = tokenize(name, text)
  if (tokens.length === 0) return { kind: 'true' }
  let i = 0
  const peek = () => tokens[i]
  const describe = (t: Token | undefined) => (t ? `"${t.text}"` : 'the end of the rule')
  const colOf = (t: Token | undefined) => t?.col ?? text.length + 1

  const orExpr = (): Check => {
    const checks = [andExpr()]
    while (peek()?.type === 'or') {
      i++
      checks.push(andExpr())
    }
    return checks.length === 1 ? checks[0]! : { kind: 'or', checks }
  }
  const andExpr = (): Check => {
    const checks = [notExpr()]
    while (peek()?.type === 'and') {
      i++
      checks.push(notExpr())
    }
    return checks.length === 1 ? checks[0]! : { kind: 'and', checks }
  }
  const notExpr = (): Check => {
    const t = peek()
    if (t?.type === 'not') {
      i++
      return { kind: 'not', check: notExpr() }
    }
    if (t?.type === '(') {
      i++
      const inner = orExpr()
      const close = peek()
      if (close?.type !== ')')
        fail(
          name,
          `expected ")" to close the "(" at column ${t.col}, found ${describe(close)}`,
          colOf(close),
        )
      i++
      return inner
    }
    if (t?.type === 'check') {
      i++
      return t.check
    }
    return fail(name, `expected a check, "(" or "not", found ${describe(t)}`, colOf(t))
  }

  const check = orExpr()
  const extra = peek()
  if (extra)
    fail(name, `expected "and", "or" or the end of the rule, found ${describe(extra)}`, extra.col)
  return check
}
