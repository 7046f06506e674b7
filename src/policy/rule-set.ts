/**
 * A set of named, parsed rules in which every `rule:NAME` resolves and no rule refers back to
 * itself. oslo.policy finds out at request time (an unknown rule is "never"; a cycle recurses until
 * Python gives up); we find out when the set is built, so that start-up fails instead.
 */
import { evaluate, ruleReferences, type Check, type Credentials, type Target } from './check.js'
import { parseRule, PolicySyntaxError } from './parser.js'

export class RuleSet {
  readonly #checks: ReadonlyMap<string, Check>

  private constructor(checks: ReadonlyMap<string, Check>) {
    this.#checks = checks
  }

  /**
   * Parses every rule and checks the references between them.
   * @param where prefixes every error message (e.g. the policy file's path).
   * @throws PolicySyntaxError for a bad rule, an unknown `rule:` reference or a cycle.
   */
  static parse(rules: Readonly<Record<string, string>>, where?: string): RuleSet {
    const checks = new Map<string, Check>()
    const prefix = where ? `${where}: ` : ''
    for (const [name, text] of Object.entries(rules)) {
      try {
        checks.set(name, parseRule(name, text))
      } catch (err) {
        if (!(err instanceof PolicySyntaxError) || !where) throw err
        throw new PolicySyntaxError(`${prefix}${err.message}`, {
          details: { ...err.details, file: where },
          cause: err,
        })
      }
    }
    checkReferences(checks, prefix)
    return new RuleSet(checks)
  }

  /** Whether `name` is in the set. */
  has(name: string): boolean {
    return this.#checks.has(name)
  }

  /** The parsed rule; throws for an unknown name (callers check {@link has} first). */
  check(name: string): Check {
    const check = this.#checks.get(name)
    if (!check) throw new Error(`unknown policy rule ${name}`)
    return check
  }

  /** Evaluates the rule `name` for these credentials and this target. */
  allows(name: string, creds: Credentials, target: Target): boolean {
    return evaluate(this.check(name), creds, target, (ref) => this.check(ref))
  }
}

/** Every reference resolves, and following references never comes back to where it started. */
function checkReferences(checks: ReadonlyMap<string, Check>, prefix: string): void {
  const done = new Set<string>()
  const visit = (name: string, path: string[]): void => {
    if (done.has(name)) return
    const at = path.indexOf(name)
    if (at >= 0) {
      const cycle = [...path.slice(at), name]
      throw new PolicySyntaxError(
        `${prefix}policy rules refer to each other in a cycle: ${cycle.join(' → ')}`,
        {
          details: { rule: name, cycle },
        },
      )
    }
    const check = checks.get(name)
    if (!check) return
    for (const ref of ruleReferences(check)) {
      if (!checks.has(ref)) {
        throw new PolicySyntaxError(
          `${prefix}policy rule "${name}" refers to rule:${ref}, which is not defined`,
          {
            details: { rule: name, reference: ref },
          },
        )
      }
      visit(ref, [...path, name])
    }
    done.add(name)
  }
  for (const name of checks.keys()) visit(name, [])
}
