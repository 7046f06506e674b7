import { ForbiddenError } from './errors.js'

/**
 * Who is calling the API, as the authentication hook (src/api/auth.ts) established it, in the
 * form the policy layer consumes. With `[api] auth_strategy = noauth` every caller is an admin of
 * `[api] noauth_project_id`; with `keystone` everything here is what Keystone said of the tokens.
 */
export interface RequestContext {
  /** Keystone user id; null for noauth. */
  userId: string | null
  /** The project the token is scoped to; null for a token without project scope. */
  projectId: string | null
  /** Role names of the X-Auth-Token (implied roles included). */
  roles: string[]
  /** The token carries the role `admin`. */
  isAdmin: boolean
  /** The token is system-scoped (no project). */
  systemScope: boolean
  /** Role names of a valid X-Service-Token; empty without one. */
  serviceRoles: string[]
  /**
   * A valid X-Service-Token came and was accepted as a service token: it carries one of
   * `[keystone_authtoken] service_token_roles` (or `service_token_roles_required` is false).
   */
  serviceToken: boolean
  /** How the caller was established. */
  authStrategy: 'keystone' | 'noauth'
}

/** A frozen context (one object can serve every request). */
export function freezeContext(ctx: RequestContext): RequestContext {
  Object.freeze(ctx.roles)
  Object.freeze(ctx.serviceRoles)
  return Object.freeze(ctx)
}

/**
 * The project whose accelerator requests (v2) and v1 attachments the caller sees and touches:
 * every project's for an admin (undefined), else its own (none without a project).
 */
export function visibleProject(ctx: RequestContext): string | undefined {
  return ctx.isAdmin ? undefined : (ctx.projectId ?? '')
}

/**
 * Refuses (403 naming `project_id`) a non-admin who names another project than its token's in a
 * request about one project (`what`, e.g. "read the quota"); an admin may name any.
 */
export function refuseOtherProject(ctx: RequestContext, asked: string | undefined, what: string) {
  if (asked === undefined || ctx.isAdmin || asked === ctx.projectId) return
  throw new ForbiddenError(
    `only an admin may ${what} of another project: project_id ${asked} is not the token's project (${ctx.projectId ?? 'none'})`,
    { code: 'POLICY_NOT_AUTHORIZED', details: { field: 'project_id' } },
  )
}
