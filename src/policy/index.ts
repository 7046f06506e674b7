/**
 * The policy engine's surface for the API and `cyborg policy list`: build an enforcer from the
 * configuration, then `enforcer.enforce(rule, ctx, target)`.
 */
export {
  createEnforcer,
  createEnforcerFromRules,
  credentialsOf,
  DEFAULT_RULES,
} from './enforcer.js'
export type {
  EffectiveRule,
  Enforcer,
  EnforcerOptions,
  PolicyConfig,
  PolicySubject,
} from './enforcer.js'
export type { Operation, RuleDefault } from './base-rules.js'
export { createReloadingEnforcer } from './reloading-enforcer.js'
export type { ReloadingEnforcer, ReloadingEnforcerOptions } from './reloading-enforcer.js'
export { PolicySyntaxError } from './parser.js'
export { DEFAULT_POLICY_FILE } from './policy-file.js'
export { renderPolicyJson, renderPolicyText, renderRulesMarkdown } from './render.js'
