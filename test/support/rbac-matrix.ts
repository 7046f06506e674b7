/**
 * The RBAC matrix of test/keystone/rbac.test.ts: each endpoint with the status every persona must
 * get. Targets are chosen so that a call the policy lets through changes nothing (unknown uuids,
 * invalid bodies, idempotent deletes), so 403 always means the policy or the service-token gate
 * refused. `arq` is project main's accelerator request, made in the test's setup.
 */

export const PERSONAS = [
  'admin',
  'manager',
  'member',
  'reader',
  'service',
  'other',
  'nova',
  'none',
  'garbage',
] as const
/** `revoked` (a real token, revoked before use: what an expired one gets too) is asked as well, and must fare as `garbage`. */
export type Who = (typeof PERSONAS)[number] | 'revoked'
const MISSING = '0dd00000-0000-4000-8000-00000000beef'

/** One row: a request, the status for each persona in PERSONAS order, and extra headers. */
export type Row = [
  method: string,
  url: string,
  body: unknown,
  statuses: string,
  headers?: Record<string, string>,
]

const V27 = { 'openstack-api-version': 'accelerator 2.7' }
const V28 = { 'openstack-api-version': 'accelerator 2.8' }

/** The JSON patch that unbinds `arq`: its host, provider and instance removed. */
export const unbind = (arq: string) => ({
  [arq]: [
    { path: '/hostname', op: 'remove' },
    { path: '/device_rp_uuid', op: 'remove' },
    { path: '/instance_uuid', op: 'remove' },
  ],
})

/** Every endpoint, with project main's request `arq` as the target of the ARQ rows. */
export const rbacRows = (arq: string): Row[] => [
  //                                                                       admin mgr member reader service other nova none garbage
  [
    'GET',
    '/',
    undefined,
    '                                                200 200 200 200 200 200 200 200 200',
  ],
  [
    'GET',
    '/v2',
    undefined,
    '                                              200 200 200 200 200 200 200 200 200',
  ],
  [
    'GET',
    '/v1',
    undefined,
    '                                              200 200 200 200 200 200 200 200 200',
  ],
  [
    'GET',
    '/healthcheck',
    undefined,
    '                                      200 200 200 200 200 200 200 200 200',
  ],
  [
    'GET',
    '/v2/device_profiles',
    undefined,
    '                               200 200 200 200 403 200 200 401 401',
  ],
  [
    'GET',
    `/v2/device_profiles/${MISSING}`,
    undefined,
    '                    404 404 404 404 403 404 404 401 401',
  ],
  [
    'POST',
    '/v2/device_profiles',
    [],
    '                                     400 403 403 403 403 403 403 401 401',
  ],
  [
    'DELETE',
    `/v2/device_profiles/${MISSING}`,
    undefined,
    '                 404 403 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v2/accelerator_requests',
    { device_profile_name: 'nope' },
    '   404 404 404 403 404 404 404 401 401',
  ],
  [
    'GET',
    '/v2/accelerator_requests',
    undefined,
    '                          200 200 200 200 403 200 200 401 401',
  ],
  [
    'GET',
    `/v2/accelerator_requests/${arq}`,
    undefined,
    '                   200 200 200 200 403 404 200 401 401',
  ],
  [
    'PATCH',
    `/v2/accelerator_requests/${arq}`,
    unbind(arq),
    '                  403 403 403 403 404 403 202 401 401',
  ],
  [
    'DELETE',
    `/v2/accelerator_requests?instance=${MISSING}`,
    undefined,
    '  403 403 403 403 204 403 204 401 401',
  ],
  [
    'DELETE',
    `/v2/accelerator_requests/${MISSING}`,
    undefined,
    '           404 404 404 403 404 404 404 401 401',
  ],
  [
    'GET',
    '/v2/devices',
    undefined,
    '                                       200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    `/v2/devices/${MISSING}`,
    undefined,
    '                            404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    `/v2/devices/${MISSING}/disable`,
    undefined,
    '                   404 403 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    `/v2/devices/${MISSING}/enable`,
    undefined,
    '                    404 403 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    `/v2/devices/${MISSING}/ready`,
    undefined,
    '                     404 404 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v2/deployables',
    undefined,
    '                                   200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    `/v2/deployables/${MISSING}`,
    undefined,
    '                        404 404 403 403 403 403 403 401 401',
  ],
  [
    'PATCH',
    `/v2/deployables/${MISSING}/program`,
    [{ path: '/program', op: 'replace', value: [{ image_uuid: MISSING }] }],
    '404 403 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v2/attributes',
    undefined,
    '                                    200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    `/v2/attributes/${MISSING}`,
    undefined,
    '                         404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v2/attributes',
    {},
    '                                          400 403 403 403 403 403 403 401 401',
  ],
  [
    'DELETE',
    `/v2/attributes/${MISSING}`,
    undefined,
    '                      404 403 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v1/accelerators',
    undefined,
    '                                  200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    `/v1/accelerators/${MISSING}`,
    undefined,
    '                       404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v1/accelerators',
    {},
    '                                        400 400 403 403 403 403 403 401 401',
  ],
  [
    'PUT',
    `/v1/accelerators/${MISSING}`,
    { hostname: 'node1' },
    '          404 404 403 403 403 403 403 401 401',
  ],
  [
    'DELETE',
    `/v1/accelerators/${MISSING}`,
    undefined,
    '                    404 404 403 403 403 403 403 401 401',
  ],
  [
    'PUT',
    `/v1/accelerators/${MISSING}/acc_specs`,
    { acc_specs: {} },
    '    404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    `/v1/accelerators/${MISSING}/ready`,
    undefined,
    '                404 404 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v1/drivers',
    undefined,
    '                                       200 200 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v1/drivers/nope/install',
    { hostname: 'nowhere' },
    '           404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v1/drivers/nope/uninstall',
    { hostname: 'nowhere' },
    '         404 404 403 403 403 403 403 401 401',
  ],
  [
    'PATCH',
    '/v1/drivers/nope',
    { hostname: 'nowhere', options: { a: 'b' } },
    '404 404 403 403 403 403 403 401 401',
  ],
  [
    'POST',
    '/v1/discovery',
    { hostname: 'nowhere' },
    '                      404 404 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v1/backend_services',
    undefined,
    '                              200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v1/status',
    undefined,
    '                                        200 200 403 403 403 403 403 401 401',
  ],
  [
    'GET',
    '/v1/telemetry',
    undefined,
    '                                     200 403 403 403 403 403 403 401 401',
  ],
  ['GET', '/v2/webhooks', undefined, '                   200 403 403 403 403 403 403 401 401'],
  ['POST', '/v2/webhooks', {}, '                         400 403 403 403 403 403 403 401 401'],
  ['GET', `/v2/webhooks/${MISSING}`, undefined, '         404 403 403 403 403 403 403 401 401'],
  [
    'PATCH',
    `/v2/webhooks/${MISSING}`,
    { enabled: false },
    '                             404 403 403 403 403 403 403 401 401',
  ],
  ['DELETE', `/v2/webhooks/${MISSING}`, undefined, '      404 403 403 403 403 403 403 401 401'],
  [
    'GET',
    `/v2/webhooks/${MISSING}/deliveries`,
    undefined,
    '                  404 403 403 403 403 403 403 401 401',
  ],
  // The reads of issue 17 (microversions 2.6 and 2.7): any reader, never a bare service token.
  ['GET', '/v2/capacity', undefined, '                  200 200 200 200 403 200 200 401 401', V27],
  [
    'POST',
    '/v2/device_profiles/rbac-fpga/explain',
    {},
    '                                200 200 200 200 403 200 200 401 401',
    V27,
  ],
  ['GET', '/v2/quota', undefined, '                     200 200 200 200 403 200 200 401 401', V27],
  // The custody ledger (2.8): any reader (a non-admin sees their project's records only).
  ['GET', '/v2/custody', undefined, '                   200 200 200 200 403 200 200 401 401', V28],
  [
    'GET',
    `/v2/custody/${MISSING}`,
    undefined,
    '                           404 404 404 404 403 404 404 401 401',
    V28,
  ],
  // Clean before reuse by hand (2.8): admin only; an unknown device is a 404 and changes nothing.
  [
    'POST',
    `/v2/devices/${MISSING}/clean`,
    {},
    '                    404 403 403 403 403 403 403 401 401',
    V28,
  ],
  [
    'POST',
    `/v2/devices/${MISSING}/configure`,
    { sriov_numvfs: 4 },
    '404 403 403 403 403 403 403 401 401',
    V28,
  ],
]
