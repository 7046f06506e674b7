/**
 * ConductorRpc 1.4, driver administration and on-demand discovery across agents (seed 004: the
 * generic driver's driver-list, install-driver, uninstall-driver, update-driver, discover-services).
 *
 * The agents are the `cyborg-agent` rows of the services table. Each host is asked in parallel,
 * with a bound (`listTimeoutMs` for listings, `actionTimeoutMs` for changes and discoveries): a host
 * that does not answer in time is reported `unreachable`, never a failure of the whole call. A named
 * host that is not a known agent is a NotFoundError naming it. Nothing here writes inventory: the
 * agents report what changed through `reportInventory` as usual. The agents own their driver
 * state, so the conductor learns of a change from their answers: each host that made one gets an
 * `accelerator.driver.installed`, `.uninstalled` or `.updated` event, written once it answered.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import { listDriverAllocations, type DriverAllocation } from '../db/driver-allocations.js'
import { AGENT_BINARY } from '../db/service-rows.js'
import { listServices, type Service } from '../db/reads/service-reads.js'
import type { AgentRpc, DriverAdminState } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type {
  DriverActionOutcome,
  HostDiscovery,
  HostDrivers,
  HostError,
} from '../rpc/admin-types.js'
import {
  AppError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { diffDeployables, flattenInventory } from './discovery-diff.js'
import { checkDriverRequest, checkDriverUpdate, checkHostRequest } from './validate.js'
import { getHostInventory } from '../db/host-inventory.js'
import { errorMessage } from '../domain/error-message.js'
import type { GroupCommitter } from '../db/core/group-commit.js'
import { insertEvents } from '../db/outbox/events.js'
import { driverEvent, type DriverAction } from '../domain/events.js'
import { formatTimestamp } from '../domain/time.js'

export type AdminAgent = Pick<
  AgentRpc,
  'listDrivers' | 'setDriverEnabled' | 'updateDriverOptions' | 'discover'
>

export interface DriverAdminServiceOptions {
  /** How long a listing waits for each agent. @default 5000 */
  listTimeoutMs?: number
  /** How long a change or a discovery waits for each agent (they rediscover). @default 20000 */
  actionTimeoutMs?: number
}

export interface DriverAdminServiceDeps {
  db: DatabaseHandle
  agentFor: (host: string) => AdminAgent
  log: Logger
  /** Where the driver events are written; without it none are. */
  committer?: Pick<GroupCommitter, 'run'>
  /** The time of an event (formatTimestamp). @default now */
  now?: () => string
}

export type DriverAdminService = Pick<
  ConductorRpc,
  'listAgentDrivers' | 'installDriver' | 'uninstallDriver' | 'updateDriver' | 'discoverHosts'
>

const failure = (err: unknown): HostError => ({
  code: err instanceof AppError ? err.code : 'INTERNAL_ERROR',
  message: errorMessage(err),
})

/** A timeout or a bus that cannot deliver: the agent is unreachable, not failing. */
const unreachable = (err: unknown) => err instanceof TimeoutError || err instanceof UnavailableError

/** `promise`, or a TimeoutError after `ms`. */
function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TimeoutError(`${what} did not answer within ${ms} ms`, { code: 'AGENT_UNREACHABLE' }),
        ),
      ms,
    )
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** What the module functions use: the deps with the bounds of the calls to agents. */
type Ctx = DriverAdminServiceDeps & Required<DriverAdminServiceOptions>

export function createDriverAdminService(
  deps: DriverAdminServiceDeps,
  options: DriverAdminServiceOptions = {},
): DriverAdminService {
  const { listTimeoutMs = 5000, actionTimeoutMs = 20_000 } = options
  const ctx: Ctx = { ...deps, listTimeoutMs, actionTimeoutMs }
  return {
    async listAgentDrivers(req) {
      const hosts = await agentHosts(ctx, checkHostRequest(req ?? {}).hostname)
      return { hosts: await Promise.all(hosts.map((s) => listHost(ctx, s))) }
    },

    async installDriver(req) {
      const { driver, hostname } = checkDriverRequest(req)
      return act(ctx, driver, hostname, 'installed', (agent) =>
        agent.setDriverEnabled({ driver, enabled: true }),
      )
    },

    async uninstallDriver(req) {
      const { driver, hostname, projectId } = checkDriverRequest(req)
      return act(
        ctx,
        driver,
        hostname,
        'uninstalled',
        (agent) => agent.setDriverEnabled({ driver, enabled: false }),
        (hosts) => refuseAllocated(ctx, driver, hosts, projectId),
      )
    },

    async updateDriver(req) {
      const { driver, options, hostname } = checkDriverUpdate(req)
      if (Object.keys(options).length === 0)
        throw new InvalidInputError('options: must set at least one option', {
          details: { field: 'options' },
        })
      return act(ctx, driver, hostname, 'updated', (agent) =>
        agent.updateDriverOptions({ driver, options }),
      )
    },

    async discoverHosts(req) {
      const hosts = await agentHosts(ctx, checkHostRequest(req ?? {}).hostname)
      return { hosts: await Promise.all(hosts.map((s) => discoverHost(ctx, s))) }
    },
  }
}

/** The agents to ask: every known one, or the named one. @throws NotFoundError for an unknown host */
async function agentHosts(ctx: Ctx, hostname: string | undefined): Promise<Service[]> {
  const agents = (await listServices(ctx.db.db)).filter((s) => s.binary === AGENT_BINARY)
  if (hostname === undefined) return agents
  const one = agents.find((s) => s.host === hostname)
  if (one) return [one]
  const known = agents.map((s) => s.host)
  throw new NotFoundError(
    `host ${hostname} is not a known agent; known agents: ${known.join(', ') || '(none)'}`,
    {
      code: 'HOST_NOT_FOUND',
      details: { field: 'hostname', hostname, known },
    },
  )
}

/** One host's drivers, or why it did not list them. */
async function listHost(ctx: Ctx, s: Service): Promise<HostDrivers> {
  try {
    const answer = await bounded(
      ctx.agentFor(s.host).listDrivers({}),
      ctx.listTimeoutMs,
      `agent ${s.host}`,
    )
    return { hostname: s.host, status: 'ok', lastSeen: s.lastSeen, drivers: answer.drivers }
  } catch (err) {
    ctx.log.debug({ err, host: s.host }, 'agent did not list its drivers')
    return {
      hostname: s.host,
      status: unreachable(err) ? 'unreachable' : 'failed',
      lastSeen: s.lastSeen,
      drivers: [],
      error: failure(err),
    }
  }
}

/**
 * Refuses (ConflictError) when a device of `driver` on `hosts` is allocated. With `project` (a
 * non-admin caller's), it names only that project's requests and counts the others.
 */
async function refuseAllocated(ctx: Ctx, driver: string, hosts: Service[], project?: string) {
  const listed = await Promise.all(hosts.map((s) => listHost(ctx, s)))
  const names = new Set([driver])
  for (const h of listed) {
    for (const d of h.drivers)
      if (d.name === driver || d.aliases.includes(driver))
        [d.name, ...d.aliases].forEach((n) => names.add(n))
  }
  const held = await listDriverAllocations(
    ctx.db.db,
    [...names],
    hosts.map((h) => h.host),
  )
  if (held.length === 0) return
  const shown = held.map((a) => ({
    ...a,
    requests: a.requests.filter((r) => project === undefined || r.projectId === project),
    others: a.requests.filter((r) => project !== undefined && r.projectId !== project).length,
  }))
  throw new ConflictError(
    `driver ${driver} has allocated devices: ${shown.map(describeAllocation).join('; ')}; detach or unbind them first`,
    {
      code: 'DRIVER_DEVICES_ALLOCATED',
      details: {
        driver,
        allocations: shown.map((a) => ({
          hostname: a.hostname,
          name: a.name,
          uuid: a.uuid,
          requests: a.requests.map(({ uuid, state, instanceUuid }) => ({
            uuid,
            state,
            instanceUuid,
          })),
        })),
      },
    },
  )
}

/** Writes an event per host whose agent made the change (a failed write is logged: it stands). */
async function record(ctx: Ctx, what: DriverAction, outcomes: DriverActionOutcome[]) {
  const at = (ctx.now ?? (() => formatTimestamp(new Date())))()
  const events = outcomes.flatMap(({ hostname, state }) =>
    state ? [driverEvent(what, { hostname, ...state }, at)] : [],
  )
  if (events.length === 0 || !ctx.committer) return
  await ctx.committer
    .run((trx) => insertEvents(trx, events))
    .catch((err: unknown) => ctx.log.error({ err, what }, 'could not record driver events'))
}

/** One host's answer to a change: its outcome; a named host's error (other than unreachable) propagates. */
async function actOn(
  ctx: Ctx,
  s: Service,
  named: boolean,
  what: DriverAction,
  call: (agent: AdminAgent) => Promise<DriverAdminState>,
): Promise<DriverActionOutcome & { err?: unknown }> {
  try {
    const state = await bounded(call(ctx.agentFor(s.host)), ctx.actionTimeoutMs, `agent ${s.host}`)
    if (state.report.ok) return { hostname: s.host, status: 'ok', state }
    const { code, message } = state.report
    return {
      hostname: s.host,
      status: 'failed',
      state,
      error: { code, message: `${what} done, but the rediscovery failed: ${message}` },
    }
  } catch (err) {
    if (named && !unreachable(err)) throw err
    const skipped = err instanceof NotFoundError && err.code === 'DRIVER_NOT_FOUND'
    return {
      hostname: s.host,
      status: skipped ? 'skipped' : unreachable(err) ? 'unreachable' : 'failed',
      error: failure(err),
      err,
    }
  }
}

/** Runs `call` on every target host; named-host errors propagate, the rest become outcomes. */
async function act(
  ctx: Ctx,
  driver: string,
  hostname: string | undefined,
  what: DriverAction,
  call: (agent: AdminAgent) => Promise<DriverAdminState>,
  before?: (hosts: Service[]) => Promise<void>,
) {
  const hosts = await agentHosts(ctx, hostname)
  await before?.(hosts)
  const outcomes = await Promise.all(
    hosts.map((s) => actOn(ctx, s, hostname !== undefined, what, call)),
  )
  const answered = outcomes.filter((o) => o.status !== 'unreachable')
  if (
    hostname === undefined &&
    answered.length > 0 &&
    answered.every((o) => o.status === 'skipped')
  ) {
    throw new NotFoundError(`driver ${driver} is not configured on any agent that answered`, {
      code: 'DRIVER_NOT_FOUND',
      details: { field: 'driver', driver },
    })
  }
  // Every agent refused the input the same way (bad options): the caller's mistake, not the hosts'.
  const refused = answered.filter((o) => o.status !== 'skipped')
  if (refused.length > 0 && refused.every((o) => o.err instanceof InvalidInputError))
    throw refused[0]!.err
  await record(ctx, what, outcomes)
  ctx.log.info(
    { driver, what, hosts: outcomes.map((o) => [o.hostname, o.status]) },
    `driver ${what}`,
  )
  return { driver, hosts: outcomes.map(({ err: _err, ...o }) => o) }
}

/** Has one host's agent discover now, and what changed in its inventory meanwhile. */
async function discoverHost(ctx: Ctx, s: Service): Promise<HostDiscovery> {
  const before = flattenInventory(await getHostInventory(ctx.db.db, s.host))
  const base = { hostname: s.host, added: [], changed: [], removed: [] }
  try {
    const report = await bounded(
      ctx.agentFor(s.host).discover({}),
      ctx.actionTimeoutMs,
      `agent ${s.host}`,
    )
    const after = flattenInventory(await getHostInventory(ctx.db.db, s.host))
    return { hostname: s.host, status: 'ok', ...diffDeployables(before, after), report }
  } catch (err) {
    return { ...base, status: unreachable(err) ? 'unreachable' : 'failed', error: failure(err) }
  }
}

/**
 * `node1_FakeDevice (held by accelerator request <uuid> Bound for instance <uuid>)`; `others`
 * requests of projects the caller may not see are only counted.
 */
function describeAllocation(a: DriverAllocation & { others: number }): string {
  const holders = a.requests.map(
    (r) =>
      `accelerator request ${r.uuid} ${r.state}${r.instanceUuid ? ` for instance ${r.instanceUuid}` : ''}`,
  )
  if (a.others > 0) holders.push(`${a.others} accelerator request(s) of other projects`)
  if (holders.length === 0) holders.push(`${a.handlesInUse} attach handle(s) in use`)
  return `${a.name} on ${a.hostname} (held by ${holders.join(', ')})`
}
