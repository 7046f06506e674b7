/**
 * The base rules the API rules are built from (cyborg/policies/base.py, 2026 secure RBAC): one rule
 * per persona, their composites, and the deprecated legacy rules, kept so that a policy.yaml that
 * refers to them still loads. Keystone's implied roles make an admin also a manager, member and
 * reader, a manager also a member and reader, and a member also a reader.
 */

/** An operation a rule guards, as oslo.policy's DocumentedRuleDefault lists them. */
export interface Operation {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  readonly path: string
}

/** A rule and its default, as oslo.policy's RuleDefault / DocumentedRuleDefault. */
export interface RuleDefault {
  /** `cyborg:arq:create`, `admin_api`, … */
  readonly name: string
  /** The default rule text (oslo.policy's `check_str`). */
  readonly checkStr: string
  readonly description: string
  /** The API operations guarded; empty for base rules, which only other rules refer to. */
  readonly operations: readonly Operation[]
  /** The token scopes the rule accepts: `project` for every API rule, as in OpenStack Cyborg. */
  readonly scopeTypes: readonly 'project'[]
  /** The pre-2026 default, kept for documentation: it is not OR-ed with the new default. */
  readonly deprecatedRule?: string
}

function base(
  name: string,
  checkStr: string,
  description: string,
  deprecated = false,
): RuleDefault {
  return {
    name,
    checkStr,
    description: deprecated ? `DEPRECATED: ${description}` : description,
    operations: [],
    scopeTypes: [],
  }
}

export const BASE_RULES: readonly RuleDefault[] = [
  base(
    'admin_api',
    'role:admin',
    'Default rule for administrative APIs: the admin role, in any project.',
  ),
  base(
    'project_admin_api',
    'role:admin and project_id:%(project_id)s',
    'An admin of the project that owns the target.',
  ),
  base(
    'project_manager_api',
    'role:manager and project_id:%(project_id)s',
    'A manager of the project that owns the target.',
  ),
  base(
    'project_member_api',
    'role:member and project_id:%(project_id)s',
    'A member of the project that owns the target.',
  ),
  base(
    'project_reader_api',
    'role:reader and project_id:%(project_id)s',
    'A reader of the project that owns the target.',
  ),
  base('service_api', 'role:service', 'A service (such as Nova) acting on behalf of a user.'),
  base(
    'project_manager_or_admin',
    'rule:project_manager_api or rule:admin_api',
    'A project manager or an admin.',
  ),
  base(
    'project_member_or_admin',
    'rule:project_member_api or rule:admin_api',
    'A project member or an admin.',
  ),
  base(
    'project_reader_or_admin',
    'rule:project_reader_api or rule:admin_api',
    'A project reader or an admin.',
  ),
  base(
    'project_member_or_service',
    'rule:project_member_api or rule:service_api',
    'A project member or a service.',
  ),
  base(
    'admin_or_owner',
    'is_admin:True or project_id:%(project_id)s',
    'Admin or any user of the owning project.',
    true,
  ),
  base('default', 'rule:admin_or_owner', 'The legacy default rule.', true),
  base('is_admin', 'rule:admin_api', 'The legacy admin rule.', true),
  base('allow', '@', 'Always allowed.', true),
  base('deny', '!', 'Never allowed.', true),
  base('public_api', 'is_public_api:True', 'Internal flag of public (unauthenticated) APIs.', true),
]
