/**
 * Driver administration and on-demand discovery under `/v1` (seed 004, docs/api-admin.md), all
 * through the conductor, which asks the agents:
 * `GET /v1/drivers?hostname=`, `POST /v1/drivers/{name}/install|uninstall` (`{"hostname"?}`),
 * `PATCH /v1/drivers/{name}` (`{"hostname"?, "options": {…}}`) and `POST /v1/discovery` (`{"hostname"?}`).
 * Bodies are checked by strict schemas: an unknown field is a 400 naming it.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify'
import type {
  AgentDriverInfo,
  DiscoveredItem,
  DriverActionOutcome,
  HostDiscovery,
  HostDrivers,
} from '../../rpc/admin-types.js'
import { visibleProject } from '../../domain/request-context.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V1Env } from './env.js'
import * as docs from './schemas/admin.js'

const Hostname = Type.String({ minLength: 1, maxLength: 255 })
const HostBody = Type.Object({ hostname: Type.Optional(Hostname) }, { additionalProperties: false })
const PatchBody = Type.Object(
  {
    hostname: Type.Optional(Hostname),
    options: Type.Record(
      Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
      Type.String({ maxLength: 65536 }),
      {
        minProperties: 1,
        maxProperties: 64,
        additionalProperties: false,
      },
    ),
  },
  { additionalProperties: false },
)

/** An empty body is `{}`: `hostname` is optional, so a POST may come without one. */
const emptyBodyIsObject: preValidationHookHandler = (request, _reply, done) => {
  request.body ??= {}
  done()
}

/** `installed` when enabled and its last discovery succeeded; `enabled` when it has not, or failed; else `disabled`. */
export const driverStatus = (d: AgentDriverInfo) =>
  !d.enabled ? 'disabled' : d.lastDiscovery?.ok ? 'installed' : 'enabled'

const driverView = (hostname: string, d: AgentDriverInfo) => ({
  hostname,
  name: d.name,
  aliases: d.aliases,
  version: d.version,
  status: driverStatus(d),
  enabled: d.enabled,
  devices: d.deviceCount,
  last_discovery: d.lastDiscovery && {
    at: d.lastDiscovery.at,
    ok: d.lastDiscovery.ok,
    error: d.lastDiscovery.error?.message ?? null,
  },
})

const hostView = (h: HostDrivers) => ({
  hostname: h.hostname,
  status: h.status,
  last_seen: h.lastSeen,
  error: h.error?.message ?? null,
})

const outcomeView = (o: DriverActionOutcome) => ({
  hostname: o.hostname,
  status: o.status,
  enabled: o.state?.enabled ?? null,
  options: o.state?.options ?? null,
  report: o.state?.report.ok ? o.state.report.result : null,
  error: o.error?.message ?? null,
})

const itemView = (i: DiscoveredItem) => ({
  name: i.name,
  device_type: i.deviceType,
  address: i.address,
  ...(i.fields ? { fields: i.fields } : {}),
})

const discoveryView = (h: HostDiscovery) => ({
  hostname: h.hostname,
  status: h.status,
  added: h.added.map(itemView),
  changed: h.changed.map(itemView),
  removed: h.removed.map(itemView),
  report: h.report ?? null,
  error: h.error?.message ?? null,
})

const driverParam = (request: FastifyRequest) => (request.params as { name: string }).name

export function driverRoutes(app: FastifyInstance, { conductor }: V1Env): void {
  resource(app, '/drivers', {
    GET: {
      policy: 'cyborg:driver:get_all',
      doc: docs.listDrivers,
      handler: async (request) => {
        const { hostname } = request.query as QueryOf<typeof docs.HostnameQuery>
        const { hosts } = await conductor.listAgentDrivers(
          hostname === undefined ? {} : { hostname },
        )
        return {
          drivers: hosts.flatMap((h) => h.drivers.map((d) => driverView(h.hostname, d))),
          hosts: hosts.map(hostView),
        }
      },
    },
  })

  type ActionRequest = { driver: string; hostname?: string; projectId?: string }
  for (const [verb, call] of [
    ['install', ({ projectId: _, ...req }: ActionRequest) => conductor.installDriver(req)],
    // A refusal names only the caller's requests (another project's are counted, not named).
    ['uninstall', (req: ActionRequest) => conductor.uninstallDriver(req)],
  ] as const) {
    resource(app, `/drivers/:name/${verb}`, {
      POST: {
        policy: `cyborg:driver:${verb}`,
        doc: docs.driverAction(verb),
        preValidation: emptyBodyIsObject,
        schema: { body: HostBody },
        handler: async (request) => {
          const { hostname } = request.body as Static<typeof HostBody>
          const projectId = visibleProject(request.ctx)
          const result = await call({
            driver: driverParam(request),
            ...(hostname === undefined ? {} : { hostname }),
            ...(projectId === undefined ? {} : { projectId }),
          })
          return { driver: result.driver, hosts: result.hosts.map(outcomeView) }
        },
      },
    })
  }

  resource(app, '/drivers/:name', {
    PATCH: {
      policy: 'cyborg:driver:update',
      doc: docs.updateDriver,
      schema: { body: PatchBody },
      handler: async (request) => {
        const { hostname, options } = request.body as Static<typeof PatchBody>
        const result = await conductor.updateDriver({
          driver: driverParam(request),
          options,
          ...(hostname === undefined ? {} : { hostname }),
        })
        return { driver: result.driver, hosts: result.hosts.map(outcomeView) }
      },
    },
  })

  resource(app, '/discovery', {
    POST: {
      policy: 'cyborg:discovery:run',
      doc: docs.runDiscovery,
      preValidation: emptyBodyIsObject,
      schema: { body: HostBody },
      handler: async (request) => {
        const { hostname } = request.body as Static<typeof HostBody>
        const { hosts } = await conductor.discoverHosts(hostname === undefined ? {} : { hostname })
        return { hosts: hosts.map(discoveryView) }
      },
    },
  })
}
