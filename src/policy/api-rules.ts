/**
 * The rules of every API operation and their defaults. The v2 rules are OpenStack Cyborg's
 * (cyborg/policies/*.py, 2026 defaults; see ../shared/design/cyborg-v2-facts.md §6); the v1
 * accelerator and administration rules are ours, and default to admin or project manager, like the
 * v2 hardware inventory. The ARQ rules do not check the service token for bind, unbind and delete:
 * the API does that itself (compat-v2.md).
 */
import type { Operation, RuleDefault } from './base-rules.js'

type Method = Operation['method']

function rule(
  name: string,
  checkStr: string,
  description: string,
  operations: readonly (readonly [Method, string])[],
  deprecatedRule?: string,
): RuleDefault {
  return {
    name,
    checkStr,
    description,
    operations: operations.map(([method, path]) => ({ method, path })),
    scopeTypes: ['project'],
    ...(deprecatedRule === undefined ? {} : { deprecatedRule }),
  }
}

const READER = 'rule:project_reader_or_admin'
const MEMBER_OR_SERVICE = 'rule:project_member_or_service'
const MANAGER = 'rule:project_manager_or_admin'
const ADMIN = 'rule:admin_api'

const ARQS = '/v2/accelerator_requests'
const DPS = '/v2/device_profiles'
const HOOKS = '/v2/webhooks'

export const API_RULES: readonly RuleDefault[] = [
  rule(
    'cyborg:arq:get_all',
    READER,
    'List accelerator requests (a non-admin sees those of its project).',
    [['GET', ARQS]],
    'rule:admin_or_owner',
  ),
  rule(
    'cyborg:arq:get_one',
    READER,
    'Show one accelerator request.',
    [['GET', `${ARQS}/{accelerator_request_uuid}`]],
    'rule:admin_or_owner',
  ),
  rule(
    'cyborg:arq:create',
    MEMBER_OR_SERVICE,
    'Create accelerator requests from a device profile.',
    [['POST', ARQS]],
    'rule:project_member_or_admin',
  ),
  rule(
    'cyborg:arq:update',
    MEMBER_OR_SERVICE,
    'Bind or unbind accelerator requests (the API also requires a service token).',
    [['PATCH', ARQS]],
    'rule:admin_or_owner',
  ),
  rule(
    'cyborg:arq:delete',
    MEMBER_OR_SERVICE,
    'Delete accelerator requests (a bound one, or by instance, also needs a service token).',
    [['DELETE', ARQS]],
    'rule:admin_or_owner',
  ),

  rule(
    'cyborg:device_profile:get_all',
    READER,
    'List device profiles.',
    [['GET', DPS]],
    'rule:admin_or_owner',
  ),
  rule(
    'cyborg:device_profile:get_one',
    READER,
    'Show one device profile.',
    [['GET', `${DPS}/{device_profile_uuid}`]],
    'rule:admin_or_owner',
  ),
  rule(
    'cyborg:device_profile:explain',
    READER,
    'Explain which deployables fit each group of a device profile, and which rule stops the others.',
    [['POST', `${DPS}/{device_profile_uuid}/explain`]],
  ),
  rule(
    'cyborg:device_profile:create',
    ADMIN,
    'Create a device profile (profiles are global).',
    [['POST', DPS]],
    'rule:is_admin',
  ),
  rule(
    'cyborg:device_profile:delete',
    ADMIN,
    'Delete device profiles.',
    [
      ['DELETE', `${DPS}/{device_profile_uuid}`],
      ['DELETE', `${DPS}?value={names}`],
    ],
    'rule:is_admin',
  ),

  rule(
    'cyborg:capacity:get',
    READER,
    'Count attach handles per resource class, host and trait set: used, reserved, fenced, cleaning, free.',
    [['GET', '/v2/capacity']],
  ),
  rule(
    'cyborg:quota:get',
    READER,
    "Show a project's accelerator limits and usage (an admin: any project's).",
    [['GET', '/v2/quota']],
  ),
  rule(
    'cyborg:custody:get_all',
    READER,
    "List custody ledger records (a project reader: their project's; an admin: all).",
    [['GET', '/v2/custody']],
  ),
  rule(
    'cyborg:custody:get_one',
    READER,
    "Show one custody ledger record (a project reader: their project's only).",
    [['GET', '/v2/custody/{uuid}']],
  ),
  rule(
    'cyborg:event:get_all',
    READER,
    "List the outbox's events (a project reader: their project's, and the hardware's when cyborg:device:get_all allows them; an admin: all).",
    [['GET', '/v2/events']],
  ),
  rule(
    'cyborg:event:stream',
    READER,
    'Follow the events as server-sent events (the same events as cyborg:event:get_all lists).',
    [['GET', '/v2/events/stream']],
  ),
  rule(
    'cyborg:device:get_all',
    MANAGER,
    'List devices, or count them (the summary).',
    [
      ['GET', '/v2/devices'],
      ['GET', '/v2/devices/summary'],
    ],
    'rule:admin_api',
  ),
  rule(
    'cyborg:device:get_one',
    MANAGER,
    'Show one device (and, from 2.10, its attach handles).',
    [
      ['GET', '/v2/devices/{device_uuid}'],
      ['GET', '/v2/devices/{device_uuid}/attach_handles'],
    ],
    'rule:admin_api',
  ),
  rule(
    'cyborg:device:disable',
    ADMIN,
    'Disable a device (Placement reserves all of its accelerators).',
    [['POST', '/v2/devices/{device_uuid}/disable']],
  ),
  rule('cyborg:device:enable', ADMIN, 'Enable a device again.', [
    ['POST', '/v2/devices/{device_uuid}/enable'],
  ]),
  rule(
    'cyborg:device:ready',
    MANAGER,
    'Mark a device ready (the operator lifecycle); the same operation as cyborg:v1_accelerator:ready.',
    [['POST', '/v2/devices/{device_uuid}/ready']],
  ),
  rule(
    'cyborg:device:clean',
    ADMIN,
    "Re-run the clean of a device's released units (left cleaning, or whose clean failed), or " +
      'with force_in_service put them back in service without one (recorded in the custody ' +
      'ledger).',
    [['POST', '/v2/devices/{device_uuid}/clean']],
  ),
  rule(
    'cyborg:device:configure',
    ADMIN,
    'Re-partition a device (its SR-IOV VF count or vGPU type); refused while any unit is allocated or cleaning.',
    [['POST', '/v2/devices/{device_uuid}/configure']],
  ),

  rule(
    'cyborg:deployable:get_all',
    MANAGER,
    'List deployables.',
    [['GET', '/v2/deployables']],
    'rule:admin_api',
  ),
  rule(
    'cyborg:deployable:get_one',
    MANAGER,
    'Show one deployable.',
    [['GET', '/v2/deployables/{deployable_uuid}']],
    'rule:admin_api',
  ),
  rule('cyborg:deployable:program', ADMIN, 'Program an FPGA deployable with a bitstream.', [
    ['PATCH', '/v2/deployables/{deployable_uuid}/program'],
  ]),

  rule(
    'cyborg:attribute:get_all',
    MANAGER,
    'List attributes.',
    [['GET', '/v2/attributes']],
    'rule:admin_api',
  ),
  rule(
    'cyborg:attribute:get_one',
    MANAGER,
    'Show one attribute.',
    [['GET', '/v2/attributes/{attribute_uuid}']],
    'rule:admin_api',
  ),
  rule('cyborg:attribute:create', ADMIN, 'Create an attribute of a deployable.', [
    ['POST', '/v2/attributes'],
  ]),
  rule('cyborg:attribute:delete', ADMIN, 'Delete an attribute.', [
    ['DELETE', '/v2/attributes/{attribute_uuid}'],
  ]),

  rule('cyborg:v1_accelerator:get_all', MANAGER, 'List v1 accelerators.', [
    ['GET', '/v1/accelerators'],
  ]),
  rule('cyborg:v1_accelerator:get_one', MANAGER, 'Show one v1 accelerator.', [
    ['GET', '/v1/accelerators/{uuid}'],
  ]),
  rule('cyborg:v1_accelerator:create', MANAGER, 'Register a remote accelerator.', [
    ['POST', '/v1/accelerators'],
    ['POST', '/v1/accelerators/{uuid}'],
  ]),
  rule('cyborg:v1_accelerator:update_spec', MANAGER, "Replace an accelerator's spec (acc_specs).", [
    ['PUT', '/v1/accelerators/{uuid}/acc_specs'],
  ]),
  rule('cyborg:v1_accelerator:attach', MANAGER, 'Attach an accelerator to an instance.', [
    ['PUT', '/v1/accelerators/{uuid}'],
  ]),
  rule('cyborg:v1_accelerator:detach', MANAGER, 'Detach an accelerator.', [
    ['DELETE', '/v1/accelerators/{uuid}'],
  ]),
  rule(
    'cyborg:v1_accelerator:ready',
    MANAGER,
    "Mark an accelerator's device ready (the operator lifecycle).",
    [['POST', '/v1/accelerators/{uuid}/ready']],
  ),

  rule('cyborg:driver:get_all', MANAGER, 'List the drivers of the agents and their state.', [
    ['GET', '/v1/drivers'],
  ]),
  rule('cyborg:driver:install', MANAGER, 'Install a driver on one host or all.', [
    ['POST', '/v1/drivers/{name}/install'],
  ]),
  rule('cyborg:driver:uninstall', MANAGER, 'Uninstall a driver.', [
    ['POST', '/v1/drivers/{name}/uninstall'],
  ]),
  rule('cyborg:driver:update', MANAGER, "Change a driver's runtime options.", [
    ['PATCH', '/v1/drivers/{name}'],
  ]),
  rule('cyborg:discovery:run', MANAGER, 'Run discovery on one host or all now.', [
    ['POST', '/v1/discovery'],
  ]),
  rule('cyborg:backend_service:get_all', MANAGER, 'List the backend services the drivers use.', [
    ['GET', '/v1/backend_services'],
  ]),
  rule('cyborg:status:get', MANAGER, 'Show the status of the services.', [['GET', '/v1/status']]),
  rule(
    'cyborg:telemetry:get',
    ADMIN,
    "Show the devices' latest telemetry, fleet-wide (usage, memory, temperature, power, errors).",
    [['GET', '/v1/telemetry']],
  ),
  rule(
    'cyborg:session:get',
    '@',
    "Show the caller who they are and which of the dashboard's actions the policy allows them.",
    [['GET', '/dashboard/session']],
  ),

  rule('cyborg:webhook:get_all', ADMIN, 'List the webhook endpoints (never their secrets).', [
    ['GET', HOOKS],
  ]),
  rule('cyborg:webhook:get_one', ADMIN, 'Show one webhook endpoint and its delivery counts.', [
    ['GET', `${HOOKS}/{webhook_uuid}`],
  ]),
  rule('cyborg:webhook:create', ADMIN, 'Register a webhook endpoint (its secret is shown once).', [
    ['POST', HOOKS],
  ]),
  rule(
    'cyborg:webhook:update',
    ADMIN,
    "Change a webhook's URL, filters, or enable or disable it.",
    [['PATCH', `${HOOKS}/{webhook_uuid}`]],
  ),
  rule('cyborg:webhook:delete', ADMIN, 'Delete a webhook endpoint and its deliveries.', [
    ['DELETE', `${HOOKS}/{webhook_uuid}`],
  ]),
  rule(
    'cyborg:webhook:get_deliveries',
    ADMIN,
    "List a webhook's deliveries: pending, delivered, dead (the dead letters).",
    [['GET', `${HOOKS}/{webhook_uuid}/deliveries`]],
  ),
]
