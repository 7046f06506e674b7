/**
 * The agent's side of remote accelerators (AgentRpc 1.4 `registerRemote`; seed 003 `POST
 * /accelerators`, seed 004's generic driver): the registrations this agent's `remote` driver
 * reports. They live in the agent's cache (`remote-accelerators.json`, local-cache.ts), are saved
 * before they take effect, and are handed to every enabled driver with the port's optional
 * `setRemoteAccelerators` capability before each discovery, so they survive periodic reports,
 * driver rebuilds and agent restarts.
 *
 * A registration whose report fails (the conductor refused it, a driver failed, the conductor did
 * not answer) is taken back and the agent reports again without it: the caller was told it failed,
 * so it must not appear later, and a refused entry must not block every later report of the host.
 */
import {
  isRemoteAccelerator,
  REMOTE_DRIVER,
  type AcceleratorDriver,
  type RemoteAccelerator,
} from '../drivers/driver.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { ConflictError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'

export interface RemoteRegistryDeps {
  /** Where registrations persist (the agent cache); `load` answers undefined when nothing was saved. */
  store: {
    load(): Promise<readonly RemoteAccelerator[] | undefined>
    save(list: readonly RemoteAccelerator[]): Promise<void>
  }
  /** The enabled drivers now (after runtime enable/disable and rebuilds). */
  enabled(): readonly AcceleratorDriver[]
  /** Waits for the driver settings to be loaded (so that `enabled()` is final). */
  ready(): Promise<void>
  /** Discovers and reports (the agent's serialized discovery); resolves once the conductor ingested it. */
  rediscover(): Promise<InventoryReportResult>
  log: Logger
}

export interface RemoteRegistry extends Pick<AgentRpc, 'registerRemote'> {
  /** Gives the current registrations to every enabled driver that takes them; call before each discovery. */
  feed(): Promise<void>
}

/** Whether `driver` has the remote-registration capability of the port (the remote driver does). */
const takesRegistrations = (driver: AcceleratorDriver): boolean =>
  typeof driver.setRemoteAccelerators === 'function'

const invalid = (field: string, problem: string) =>
  new InvalidInputError(`${field} ${problem}`, { details: { field } })

/** Checks `{name, uuid}`: a name of 1-255 characters, a UUID (lower-cased). */
export function parseRegistration(req: unknown): RemoteAccelerator {
  const { name, uuid } = (req !== null && typeof req === 'object' ? req : {}) as Record<
    string,
    unknown
  >
  if (typeof name !== 'string' || name.length === 0 || name.length > 255)
    throw invalid('name', 'must be a string of 1 to 255 characters')
  const reg = { name, uuid: typeof uuid === 'string' ? uuid.toLowerCase() : '' }
  if (!isRemoteAccelerator(reg)) throw invalid('uuid', 'must be a UUID')
  return reg
}

export function createRemoteRegistry(deps: RemoteRegistryDeps): RemoteRegistry {
  const { store, log } = deps
  let list: readonly RemoteAccelerator[] = []
  let loaded: Promise<void> | undefined
  let queue: Promise<unknown> = Promise.resolve()

  const load = () =>
    (loaded ??= store.load().then(
      (saved) => void (list = (saved ?? []).filter(isRemoteAccelerator)),
      (err: unknown) => {
        loaded = undefined
        throw err
      },
    ))

  /** Registrations change one at a time. */
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }

  const save = async (next: readonly RemoteAccelerator[]) => {
    await store.save(next)
    list = next
  }

  return {
    async feed() {
      await load()
      for (const driver of deps.enabled()) driver.setRemoteAccelerators?.(list)
    },

    registerRemote: (req) =>
      serialized(async () => {
        const reg = parseRegistration(req)
        await Promise.all([load(), deps.ready()])
        if (!deps.enabled().some(takesRegistrations)) {
          throw new NotFoundError(`the ${REMOTE_DRIVER} driver is not enabled on this agent`, {
            code: 'REMOTE_BACKEND_NOT_ENABLED',
            details: { driver: REMOTE_DRIVER },
          })
        }
        const same = list.find((a) => a.uuid === reg.uuid && a.name === reg.name)
        const clash = list.find((a) => (a.uuid === reg.uuid) !== (a.name === reg.name))
        if (clash) {
          const field = clash.name === reg.name ? 'name' : 'uuid'
          throw new ConflictError(
            `an accelerator with ${field} ${JSON.stringify(reg[field])} is already registered here`,
            {
              code: 'ACCELERATOR_EXISTS',
              details: { field, value: reg[field] },
            },
          )
        }
        if (!same) await save([...list, reg])
        try {
          const report = await deps.rediscover()
          log.info({ name: reg.name, uuid: reg.uuid }, 'remote accelerator registered')
          return { uuid: reg.uuid, report }
        } catch (err) {
          if (same) throw err
          log.warn(
            { err, name: reg.name, uuid: reg.uuid },
            'remote accelerator not reported; registration taken back',
          )
          await save(list.filter((a) => a.uuid !== reg.uuid)).catch((saveErr: unknown) =>
            log.error(
              { err: saveErr },
              'could not take back a remote registration; the next report carries it',
            ),
          )
          await deps
            .rediscover()
            .catch((again: unknown) =>
              log.warn({ err: again }, 'report after taking back a registration failed'),
            )
          throw err
        }
      }),
  }
}
