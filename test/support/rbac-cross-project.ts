/**
 * The cross-project rows of test/keystone/rbac.test.ts (issue 27): every v1 route and every route
 * of microversions 2.6–2.8, each tried by the manager, member and reader of a SECOND project
 * against the FIRST project's objects. The status each must get is what docs/policy.md
 * ("Projects") says: another project's accelerator requests, v1 attachments and custody records
 * are a 404 (as if they did not exist), naming another project is a 403, admin-only routes are a
 * 403. Bodies are chosen so that a call the policy lets through changes nothing of the first
 * project's; the test also checks that no answer shows any of the first project's ids.
 */

/** The second project's personas, in the order of a row's statuses. */
export const CROSS_PERSONAS = ['manager', 'member', 'reader'] as const
export type CrossWho = (typeof CROSS_PERSONAS)[number]

/** The first project's objects (and the fleet's), made in the test's setup. */
export interface FirstProject {
  /** Its id. */
  project: string
  /** Its accelerator request (v2, unbound). */
  arq: string
  /** The accelerator that its v1 attachment holds, and that accelerator's device. */
  accelerator: string
  device: string
  /** The instance its v1 attachment is attached to, and that attachment's uuid. */
  instance: string
  attachment: string
  /** A custody record of it (an attachment to `released` detached), and that instance. */
  custody: string
  released: string
  /** An admin's webhook (disabled). */
  webhook: string
}

/** One row: method, url, body, the status of each CROSS_PERSONAS persona, extra headers. */
export type CrossRow = [
  method: string,
  url: string,
  body: unknown,
  statuses: string,
  headers?: Record<string, string>,
]

const V = (minor: number) => ({ 'openstack-api-version': `accelerator 2.${minor}` })
const MISSING = '0dd00000-0000-4000-8000-00000000beef'

/** Every row; statuses are manager, member, reader of the second project. */
export const crossRows = (a: FirstProject): CrossRow[] => [
  // v1: the hardware is the fleet's (any manager reads it); attachments are the first project's.
  ['GET', '/v1', undefined, '200 200 200'],
  ['GET', '/v1/openapi.json', undefined, '200 200 200'],
  ['GET', '/v1/accelerators', undefined, '200 403 403'],
  ['GET', `/v1/accelerators?marker=${a.accelerator}`, undefined, '200 403 403'],
  ['GET', `/v1/accelerators/${a.accelerator}`, undefined, '200 403 403'],
  ['POST', '/v1/accelerators', {}, '400 403 403'],
  ['POST', `/v1/accelerators/${a.accelerator}`, { name: 'rbac-remote' }, '409 403 403'],
  // Attach: a body that does not match the accelerator (400) attaches nothing.
  [
    'PUT',
    `/v1/accelerators/${a.accelerator}`,
    { instance_uuid: a.instance, uuid: MISSING },
    '400 403 403',
  ],
  [
    'DELETE',
    `/v1/accelerators/${a.accelerator}?instance_uuid=${a.instance}`,
    undefined,
    '404 403 403',
  ],
  // Without an instance: the second project has nothing attached, so nothing is detached.
  ['DELETE', `/v1/accelerators/${a.accelerator}`, undefined, '204 403 403'],
  ['PUT', `/v1/accelerators/${a.accelerator}/acc_specs`, { acc_specs: { x: 1 } }, '400 403 403'],
  ['POST', `/v1/accelerators/${a.accelerator}/ready`, undefined, '409 403 403'],
  ['GET', '/v1/drivers', undefined, '200 403 403'],
  ['POST', '/v1/drivers/fake/install', { hostname: 'nowhere' }, '404 403 403'],
  // Refused: the first project's attachment holds a device of the driver (named only to it).
  ['POST', '/v1/drivers/fake/uninstall', { hostname: 'node1' }, '409 403 403'],
  ['PATCH', '/v1/drivers/fake', { hostname: 'nowhere', options: { a: 'b' } }, '404 403 403'],
  ['POST', '/v1/discovery', { hostname: 'nowhere' }, '404 403 403'],
  ['GET', '/v1/backend_services', undefined, '200 403 403'],
  ['GET', '/v1/status', undefined, '200 403 403'],
  ['GET', '/v1/telemetry', undefined, '403 403 403'],
  // The first project's accelerator request (v2): a 404, as if it did not exist.
  ['GET', '/v2/accelerator_requests', undefined, '200 200 200'],
  ['GET', `/v2/accelerator_requests?instance=${a.instance}`, undefined, '200 200 200'],
  ['GET', `/v2/accelerator_requests?marker=${a.arq}`, undefined, '400 400 400'],
  ['GET', `/v2/accelerator_requests/${a.arq}`, undefined, '404 404 404'],
  ['DELETE', `/v2/accelerator_requests/${a.arq}`, undefined, '404 404 403'],
  ['DELETE', `/v2/accelerator_requests?arqs=${a.arq}`, undefined, '404 404 403'],
  // 2.6–2.8: capacity and explain read the fleet; quota and custody are per project.
  ['GET', '/v2/capacity', undefined, '200 200 200', V(6)],
  ['POST', '/v2/device_profiles/rbac-fpga/explain', {}, '200 200 200', V(6)],
  ['POST', '/v2/device_profiles/rbac-fpga/explain', { project_id: a.project }, '403 403 403', V(6)],
  ['GET', '/v2/quota', undefined, '200 200 200', V(7)],
  ['GET', `/v2/quota?project_id=${a.project}`, undefined, '403 403 403', V(7)],
  ['GET', '/v2/custody', undefined, '200 200 200', V(8)],
  ['GET', `/v2/custody?project_id=${a.project}`, undefined, '403 403 403', V(8)],
  ['GET', `/v2/custody?instance_uuid=${a.released}`, undefined, '200 200 200', V(8)],
  ['GET', `/v2/custody?marker=${a.custody}`, undefined, '400 400 400', V(8)],
  ['GET', `/v2/custody/${a.custody}`, undefined, '404 404 404', V(8)],
  // Admin-only operations on the device and deployable the first project holds.
  ['GET', `/v2/devices/${a.device}`, undefined, '200 403 403', V(8)],
  ['POST', `/v2/devices/${a.device}/clean`, {}, '403 403 403', V(8)],
  ['POST', `/v2/devices/${a.device}/configure`, { sriov_numvfs: 4 }, '403 403 403', V(8)],
  [
    'PATCH',
    `/v2/deployables/${a.accelerator}/program`,
    [{ path: '/program', op: 'replace', value: [{ image_uuid: MISSING }] }],
    '403 403 403',
    V(8),
  ],
  ['GET', '/v2/webhooks', undefined, '403 403 403'],
  ['POST', '/v2/webhooks', { url: 'http://127.0.0.1:9/x', event_types: [] }, '403 403 403'],
  ['GET', `/v2/webhooks/${a.webhook}`, undefined, '403 403 403'],
  ['PATCH', `/v2/webhooks/${a.webhook}`, { enabled: true }, '403 403 403'],
  ['DELETE', `/v2/webhooks/${a.webhook}`, undefined, '403 403 403'],
  ['GET', `/v2/webhooks/${a.webhook}/deliveries`, undefined, '403 403 403'],
]

/** The first project's ids that no answer to the second project may contain. */
export const secretsOf = (a: FirstProject): string[] => [
  a.project,
  a.arq,
  a.instance,
  a.attachment,
  a.custody,
  a.released,
  a.webhook,
]
