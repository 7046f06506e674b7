/**
 * The Enforcer: every rule with its default, overridden by policy.yaml, checked for a request
 * context. The API calls `enforcer.enforce('cyborg:arq:get_all', ctx, target)` before a handler
 * runs; a denial is a ForbiddenError naming the rule (403).
 */
import { AppError, ForbiddenError } from '../domain/errors.js'
import { noopLogger, type Logger } from '../domain/logger.js'
import type { Credentials, Target } from './check.js'
import { API_RULES } from './api-rules.js'
import { BASE_RULES, type RuleDefault } from './base-rules.js'
import { findPolicyFile, readPolicyFile, type FindPolicyFileOptions } from './policy-file.js'
import { RuleSet } from './rule-set.js'

/**
 * What the policy reads of a request context; src/domain/request-context.ts's `RequestContext`
 * has all of it.
 */
export interface PolicySubject {
  readonly userId: string | null
  readonly projectId: string | null
  readonly roles: readonly string[]
  readonly isAdmin: boolean
  /** A system-scoped token: refused by every project-scoped rule. */
  readonly systemScope: boolean
  readonly serviceRoles: readonly string[]
}

/** Every registered rule and its default: the base rules, then the API rules. */
export const DEFAULT_RULES: readonly RuleDefault[] = [...BASE_RULES, ...API_RULES]

/** A rule as it is in force. */
export interface EffectiveRule {
  readonly name: string
  /** The rule text in force. */
  readonly checkStr: string
  /** The default; equal to `checkStr` unless overridden. */
  readonly defaultCheckStr: string | undefined
  /** The policy file that overrides the rule, if one does. */
  readonly overriddenIn: string | undefined
  /** Defined only by the policy file (a helper for `rule:` references); it guards nothing by itself. */
  readonly custom: boolean
  readonly description: string
  readonly operations: RuleDefault['operations']
  readonly scopeTypes: RuleDefault['scopeTypes']
}

export interface Enforcer {
  /**
   * Throws ForbiddenError ("Policy doesn't allow <rule> to be performed.") unless `rule` allows
   * the caller to act on `target`.
   * @param target the resource's owner; @default the caller's own `{project_id, user_id}`, as OpenStack Cyborg passes.
   */
  enforce(rule: string, ctx: PolicySubject, target?: Target): void
  /** Whether `rule` allows it, without throwing. */
  allowed(rule: string, ctx: PolicySubject, target?: Target): boolean
  /** Every rule in force, registered ones first in their order, then those only the policy file defines. */
  rules(): readonly EffectiveRule[]
  /** The policy file read, if any. */
  readonly policyFile: string | undefined
}

/** The oslo.policy credentials of a context (oslo.context's `to_policy_values`, plus `is_admin`). */
export function credentialsOf(ctx: PolicySubject): Credentials {
  return {
    user_id: ctx.userId,
    project_id: ctx.projectId,
    roles: ctx.roles,
    is_admin: ctx.isAdmin,
    system_scope: ctx.systemScope ? 'all' : null,
    service_roles: ctx.serviceRoles,
  }
}

export interface EnforcerOptions {
  /** Rule name → rule text, as read from a policy file. @default {} */
  overrides?: Readonly<Record<string, string>>
  /** Where the overrides come from, for messages. */
  policyFile?: string
  /** Warnings (an override of a rule that does not exist). @default noopLogger */
  log?: Logger
}

class PolicyEnforcer implements Enforcer {
  readonly #set: RuleSet
  readonly #effective: readonly EffectiveRule[]
  readonly #byName: ReadonlyMap<string, EffectiveRule>
  readonly policyFile: string | undefined

  constructor(options: EnforcerOptions) {
    const { overrides = {}, policyFile, log = noopLogger } = options
    const texts: Record<string, string> = {}
    const effective: EffectiveRule[] = []
    const known = new Set(DEFAULT_RULES.map((r) => r.name))
    for (const d of DEFAULT_RULES) {
      const override = Object.hasOwn(overrides, d.name) ? overrides[d.name] : undefined
      texts[d.name] = override ?? d.checkStr
      effective.push({
        ...d,
        checkStr: override ?? d.checkStr,
        defaultCheckStr: d.checkStr,
        overriddenIn: override === undefined ? undefined : (policyFile ?? 'overrides'),
        custom: false,
      })
    }
    for (const [name, text] of Object.entries(overrides)) {
      if (known.has(name)) continue
      log.warn(
        { policyFile, rule: name },
        `${policyFile ?? 'policy overrides'}: "${name}" is not a Cyborg policy rule; it is kept only for rule:${name} references`,
      )
      texts[name] = text
      effective.push({
        name,
        checkStr: text,
        defaultCheckStr: undefined,
        overriddenIn: policyFile ?? 'overrides',
        custom: true,
        description: 'Defined only in the policy file.',
        operations: [],
        scopeTypes: [],
      })
    }
    this.#set = RuleSet.parse(texts, policyFile)
    this.#effective = effective
    this.#byName = new Map(effective.map((r) => [r.name, r]))
    this.policyFile = policyFile
  }

  allowed(rule: string, ctx: PolicySubject, target?: Target): boolean {
    const entry = this.#byName.get(rule)
    // Enforcing a rule nobody registered is a bug in the caller (oslo.policy's PolicyNotRegistered).
    if (!entry)
      throw new AppError(`policy rule ${rule} is not registered`, {
        code: 'POLICY_NOT_REGISTERED',
        details: { rule },
      })
    // Every API rule is project-scoped: a system-scoped token (or one without a project) is refused.
    if (entry.scopeTypes.includes('project') && (ctx.systemScope || ctx.projectId === null))
      return false
    return this.#set.allows(
      rule,
      credentialsOf(ctx),
      target ?? { project_id: ctx.projectId, user_id: ctx.userId },
    )
  }

  enforce(rule: string, ctx: PolicySubject, target?: Target): void {
    if (!this.allowed(rule, ctx, target)) {
      throw new ForbiddenError(`Policy doesn't allow ${rule} to be performed.`, {
        details: { rule },
      })
    }
  }

  rules(): readonly EffectiveRule[] {
    return this.#effective
  }
}

/**
 * An enforcer over the defaults and `options.overrides`.
 * @throws PolicySyntaxError naming the rule (and `options.policyFile`) for a bad override.
 */
export function createEnforcerFromRules(options: EnforcerOptions = {}): Enforcer {
  return new PolicyEnforcer(options)
}

/** The part of the configuration the policy needs (`Config` has it). */
export interface PolicyConfig {
  readonly oslo_policy: { readonly policy_file: string }
}

/**
 * The enforcer of a configuration: `[oslo_policy] policy_file` found next to the configuration
 * files or in /etc/cyborg, read, and applied over the defaults.
 * @throws ConfigError (a PolicySyntaxError for a bad rule) naming the file; start-up stops.
 */
export function createEnforcer(
  config: PolicyConfig,
  options: FindPolicyFileOptions & { log?: Logger } = {},
): Enforcer {
  const file = findPolicyFile(config.oslo_policy.policy_file, options)
  const overrides = file === undefined ? {} : readPolicyFile(file)
  return new PolicyEnforcer({
    overrides,
    ...(file === undefined ? {} : { policyFile: file }),
    ...(options.log ? { log: options.log } : {}),
  })
}
