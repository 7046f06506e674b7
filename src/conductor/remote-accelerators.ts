/**
 * ConductorRpc 1.4 `registerRemoteAccelerator` (seed 003 `POST /accelerators`; seed 004's generic
 * driver): registers an accelerator that no agent discovers, e.g. a remote one in a standalone
 * accelerator rack. The flow is api → conductor → agent → driver: the conductor picks an agent
 * that runs the `remote` driver and hands it the registration (AgentRpc 1.4 `registerRemote`); the
 * agent saves it, rediscovers and reports, and its report brings the device and deployable in
 * like any other (one inventory), with the requested uuid as the deployable's uuid.
 *
 * The agent is the first, in host order, of the live agents of the services table (a heartbeat
 * within `agentDownTimeMs`) that accepts it. An agent without the remote driver, or one older than
 * AgentRpc 1.4, is skipped; so is one that does not answer. When none accepts: ConflictError
 * REMOTE_BACKEND_NOT_ENABLED (409: enable the driver), or UnavailableError REMOTE_BACKEND_UNREACHABLE
 * (503) when some candidate did not answer. Nothing is written here: the agent's report writes.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import { getDeployable, listDeployables } from '../db/reads/deployable-reads.js'
import { AGENT_BINARY } from '../db/service-rows.js'
import { listServices } from '../db/reads/service-reads.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import {
  AppError,
  ConflictError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import { checkRemoteRegistration } from './validate.js'

export interface RemoteAcceleratorOptions {
  /** An agent whose last heartbeat is older than this is not asked. @default 180000 (three default periods) */
  agentDownTimeMs?: number
}

export interface RemoteAcceleratorDeps {
  db: DatabaseHandle
  /** The agent of a host; absent when this conductor cannot reach agents. */
  agentFor: ((host: string) => Pick<AgentRpc, 'registerRemote'>) | undefined
  uuid: () => string
  log: Logger
  clock: Clock
}

export type RemoteAcceleratorService = Pick<ConductorRpc, 'registerRemoteAccelerator'>

const exists = (field: 'name' | 'uuid', value: string) =>
  new ConflictError(`an accelerator with ${field} ${JSON.stringify(value)} already exists`, {
    code: 'ACCELERATOR_EXISTS',
    details: { field, value },
  })

/** The agent does not offer the remote backend: try the next one. */
const declined = (err: unknown) =>
  err instanceof AppError &&
  (err.code === 'REMOTE_BACKEND_NOT_ENABLED' || err.code === 'RPC_NO_METHOD')
/** The agent did not answer: try the next one, and say so if none accepts. */
const silent = (err: unknown) => err instanceof TimeoutError || err instanceof UnavailableError

export function createRemoteAcceleratorService(
  deps: RemoteAcceleratorDeps,
  options: RemoteAcceleratorOptions = {},
): RemoteAcceleratorService {
  const { db, log, clock } = deps
  const { agentDownTimeMs = 180_000 } = options

  const checkFree = async (name: string, uuid: string) => {
    if ((await listDeployables(db.db, { name, limit: 1 })).length > 0) throw exists('name', name)
    const taken = await getDeployable(db.db, uuid).then(
      () => true,
      (err: unknown) => {
        if (err instanceof NotFoundError) return false
        throw err
      },
    )
    if (taken) throw exists('uuid', uuid)
  }

  /** Live agents, in host order. */
  const candidates = async (): Promise<string[]> => {
    const since = clock.now().getTime() - agentDownTimeMs
    return (await listServices(db.db))
      .filter((s) => s.binary === AGENT_BINARY && Date.parse(s.lastSeen) >= since)
      .map((s) => s.host)
  }

  return {
    async registerRemoteAccelerator(req) {
      const checked = checkRemoteRegistration(req)
      const name = checked.name
      const uuid = checked.uuid === undefined ? deps.uuid() : checked.uuid.toLowerCase()
      if (!deps.agentFor)
        throw new UnavailableError('this conductor cannot reach agents', { code: 'NO_AGENT_RPC' })
      await checkFree(name, uuid)
      const hosts = await candidates()
      const unanswered: string[] = []
      for (const host of hosts) {
        try {
          await deps.agentFor(host).registerRemote({ name, uuid })
        } catch (err) {
          if (declined(err)) continue
          if (silent(err)) {
            log.warn(
              { err, host },
              'agent did not answer a remote registration; trying the next one',
            )
            unanswered.push(host)
            continue
          }
          // Another host's deployable took the name or uuid meanwhile (its report was refused).
          if (err instanceof ConflictError && err.code === 'DEPLOYABLE_EXISTS') {
            throw exists(
              err.details?.field === 'uuid' ? 'uuid' : 'name',
              err.details?.field === 'uuid' ? uuid : name,
            )
          }
          throw err
        }
        await getDeployable(db.db, uuid).catch((err: unknown) => {
          throw new AppError(
            `agent ${host} reported, but accelerator ${uuid} is not in the inventory`,
            { code: 'REMOTE_NOT_INGESTED', cause: err },
          )
        })
        log.info({ host, name, uuid }, 'remote accelerator registered')
        return { uuid, hostname: host }
      }
      if (unanswered.length > 0) {
        throw new UnavailableError(
          `no agent accepted remote accelerator ${JSON.stringify(name)}; ${unanswered.join(', ')} did not answer`,
          { code: 'REMOTE_BACKEND_UNREACHABLE', details: { hosts: unanswered } },
        )
      }
      throw new ConflictError(
        `no live agent runs the remote driver, so remote accelerator ${JSON.stringify(name)} cannot be registered; ` +
          'enable it on an agent with [agent] enabled_drivers = …, remote',
        { code: 'REMOTE_BACKEND_NOT_ENABLED', details: { driver: 'remote', agents: hosts } },
      )
    },
  }
}
