/**
 * `[quota]` and `[oslo_limit]` (docs/quota.md): whether Cyborg enforces Keystone unified limits on
 * the binds it places itself (standalone binds, v1 attaches), and how it reaches Keystone. Sections
 * of the one option table in schema.ts, kept here for that file's size.
 */
import { enumOf, int, optionalStr, str } from './options.js'

export const quotaOptions = {
  driver: enumOf(['noop', 'unified_limits'] as const, {
    default: 'noop',
    help:
      'How binds Cyborg places itself (standalone binds without a Nova-chosen provider, v1 ' +
      "attaches) are limited (docs/quota.md): noop (not limited; with Nova, Nova's unified " +
      'limits count accelerators through Placement) or unified_limits (Keystone unified limits ' +
      'of the accelerator service, resource names class:<RESOURCE_CLASS>, read through ' +
      '[oslo_limit]).',
  }),
  cache_seconds: int({
    default: 60,
    min: 0,
    help:
      "Seconds a project's limits read from Keystone are kept before they are read again; 0 " +
      "reads them on every check. Usage is never cached: it is counted in the claim's " +
      'transaction.',
  }),
}

/** keystoneauth-style options of `[oslo_limit]`, as oslo.limit names them, plus the service to read limits of. */
export function osloLimitOptions<C extends object>(client: C) {
  return {
    ...client,
    system_scope: optionalStr({
      help:
        'Ask Keystone for a system-scoped token (all) instead of one scoped to project_name, as ' +
        "oslo.limit advises: a project-scoped token lists only its own project's limits. The user " +
        'needs the reader role on the system (openstack role add --user cyborg --system all ' +
        'reader).',
    }),
    endpoint_id: optionalStr({
      help:
        "Keystone id of Cyborg's endpoint; the limits read are those of its service (oslo.limit's " +
        'option). Unset: the service of type endpoint_service_type.',
    }),
    endpoint_service_type: str({
      default: 'accelerator',
      help: 'Catalog type of the service whose limits apply, when endpoint_id is unset; exactly one service of this type must exist.',
    }),
    timeout: int({ default: 30, min: 1, help: 'Seconds to wait for one Keystone answer.' }),
  }
}
