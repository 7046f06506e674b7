/**
 * The device lifecycle of seed 000, conductor side: an operator marks an `inactive` (or failed,
 * `error`) device `ready`; the conductor moves it to `installing`, asks the device's agent to run
 * its driver's install step (AgentRpc 1.2 `install`), and records `active`, or `error` with the
 * reason. Each step is a conditional UPDATE, so two conductors (or two operators) cannot both
 * start an install of one device: the second gets a ConflictError. Only `active` devices are
 * offered as inventory, so every outcome is followed by `onInventoryChanged(host)`.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import { getDevice } from '../db/reads/device-reads.js'
import type { GroupCommitter } from '../db/core/group-commit.js'
import { updateDeviceLifecycle } from '../db/lifecycle.js'
import { recordDeviceEvent } from '../db/outbox/device-events.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import { AppError, ConflictError, TimeoutError, UnavailableError } from '../domain/errors.js'
import { Lifecycle, type Device } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import { checkUuid } from './validate.js'
import { errorMessage } from '../domain/error-message.js'

/** The lifecycles from which a device may be marked ready. */
export const READY_FROM: readonly Lifecycle[] = [Lifecycle.inactive, Lifecycle.error]

export interface LifecycleDeps {
  db: DatabaseHandle
  /** The conductor's committer, so that lifecycle writes batch with the others. @default direct writes */
  committer?: Pick<GroupCommitter, 'run'>
  /** The agent of `host` (`createAgentClient(bus, host, { timeoutMs })`). */
  agentFor: (host: string) => Pick<AgentRpc, 'install'>
  log: Logger
  clock: Clock
  /** Called after a device's lifecycle settled (the Placement sync hooks in here); errors are logged. @default no-op */
  onInventoryChanged?: (host: string) => Promise<void>
  /**
   * An `installing` device untouched for this long was left by a conductor that died mid-install
   * (a live one settles it within its agent call's timeout): it may be marked ready again.
   * @default 600000 (10 minutes)
   */
  staleInstallMs?: number
}

export interface DeviceLifecycle {
  /**
   * Marks device `uuid` ready and installs it through its agent; resolves with the device as saved
   * (`active`, or `error` with `lifecycleReason`).
   * @throws InvalidInputError for a malformed uuid, NotFoundError (DEVICE_NOT_FOUND), ConflictError
   *   (DEVICE_LIFECYCLE_CONFLICT) when the device is not inactive or error
   */
  markDeviceReady(uuid: string): Promise<Device>
}

/** The lifecycle_reason of a failed install: what the agent said, or that it never answered. */
export function failureReason(host: string, err: unknown): string {
  const message = errorMessage(err)
  if (err instanceof TimeoutError || err instanceof UnavailableError)
    return `agent on ${host} did not answer: ${message}`
  if (err instanceof AppError && err.code === 'RPC_NO_METHOD') {
    return `agent on ${host} cannot install devices (it predates agent RPC 1.2): ${message}`
  }
  return message
}

export function createLifecycle(deps: LifecycleDeps): DeviceLifecycle {
  const {
    db,
    agentFor,
    clock,
    onInventoryChanged = async () => {},
    staleInstallMs = 600_000,
  } = deps
  const log = deps.log.child({ component: 'lifecycle' })
  const run = deps.committer
    ? deps.committer.run.bind(deps.committer)
    : <T>(fn: (trx: DatabaseHandle['db']) => Promise<T>) => fn(db.db)
  const now = () => formatTimestamp(clock.now())

  const conflict = (device: Device) =>
    new ConflictError(
      `device ${device.uuid} is ${device.lifecycle}; only an inactive or error device (or one ` +
        `left installing for ${staleInstallMs / 1000} s) can be marked ready`,
      {
        code: 'DEVICE_LIFECYCLE_CONFLICT',
        details: { uuid: device.uuid, lifecycle: device.lifecycle },
      },
    )

  const settle = async (device: Device, outcome: { to: Lifecycle; reason: string | null }) => {
    const at = now()
    const moved = await run(async (trx) => {
      const change = { from: [Lifecycle.installing], ...outcome }
      if (!(await updateDeviceLifecycle(trx, device.uuid, change, at))) return false
      const action = outcome.to === Lifecycle.active ? 'active' : 'error'
      await recordDeviceEvent(trx, action, device.uuid, at)
      return true
    })
    if (!moved)
      log.warn(
        { uuid: device.uuid, ...outcome },
        'device left installing meanwhile; outcome not recorded',
      )
    try {
      await onInventoryChanged(device.hostname)
    } catch (err) {
      log.warn({ err, host: device.hostname }, 'inventory change hook failed')
    }
  }

  return {
    async markDeviceReady(uuid) {
      const id = checkUuid(uuid, 'uuid')
      const device = await getDevice(db.db, id)
      const staleBefore = formatTimestamp(new Date(clock.now().getTime() - staleInstallMs))
      const stale =
        device.lifecycle === Lifecycle.installing &&
        (device.updatedAt ?? device.createdAt) < staleBefore
      if (!READY_FROM.includes(device.lifecycle) && !stale) throw conflict(device)
      const claimed = await run(async (trx) => {
        const at = now()
        if (stale) {
          const change = {
            from: [Lifecycle.installing],
            to: Lifecycle.installing,
            reason: null,
            updatedBefore: staleBefore,
          }
          if (!(await updateDeviceLifecycle(trx, id, change, at))) return false
          await recordDeviceEvent(trx, 'ready', id, at)
          return true
        }
        if (
          !(await updateDeviceLifecycle(
            trx,
            id,
            { from: READY_FROM, to: Lifecycle.ready, reason: null },
            at,
          ))
        )
          return false
        const installing = { from: [Lifecycle.ready], to: Lifecycle.installing, reason: null }
        if (!(await updateDeviceLifecycle(trx, id, installing, at))) return false
        // One event: marked ready, and installing from the same transaction on.
        await recordDeviceEvent(trx, 'ready', id, at)
        return true
      })
      if (stale)
        log.warn(
          { uuid: id, since: device.updatedAt },
          'device was left installing by a conductor that stopped; installing again',
        )
      if (!claimed) throw conflict(await getDevice(db.db, id))
      log.info({ uuid: id, host: device.hostname }, 'device marked ready; installing')

      const outcome = await agentFor(device.hostname)
        .install({ controlPath: device.controlPath })
        .then(
          ({ driver }) => ({ to: Lifecycle.active, reason: null, driver }),
          (err: unknown) => ({
            to: Lifecycle.error,
            reason: failureReason(device.hostname, err),
            err,
          }),
        )
      await settle(device, { to: outcome.to, reason: outcome.reason })
      if (outcome.to === Lifecycle.active)
        log.info(
          { uuid: id, host: device.hostname, driver: outcome.driver },
          'device installed; active',
        )
      else log.warn({ uuid: id, host: device.hostname, err: outcome.err }, 'device install failed')
      return getDevice(db.db, id)
    },
  }
}
