/**
 * Re-partitioning a device by an operator (`POST /v2/devices/{uuid}/configure`, `cyborg device
 * configure`; docs/drivers.md, "Configure"): its SR-IOV VF count or its vGPU type.
 *
 * 1. Every unit of the device is fenced (src/db/reconfig-fence.ts), or the call is a 409 naming who
 *    holds them; Placement shows them reserved, and the call is a 409 too when Placement still has
 *    allocations against one of the device's providers (a Nova claim not yet bound here).
 * 2. The host's agent applies the change through the driver and the HostProbe, then discovers and
 *    reports (`configureDevice`, AgentRpc 1.6): the report's conductor creates the providers of
 *    new deployables, deletes those of vanished ones and updates inventories before it answers.
 *    No allocation has to move, since none may exist: Placement's reshaper is not needed.
 * 3. One transaction lifts the fence, appends the custody record `configure` and writes the event;
 *    Placement is synced again. A failure that put the old layout back changes nothing else; one
 *    that could not fences the device (health `failed`, `configure failed: …`) until a configure
 *    succeeds. When the agent does not answer, the units stay fenced (reconfig-sweep.ts).
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter, WriteTrx } from '../../db/core/group-commit.js'
import { getDeviceFacts } from '../../db/outbox/device-events.js'
import { applyHealthChange, getDeviceHealth } from '../../db/device-health.js'
import { healthAfterConfigure } from '../../domain/health/configure.js'
import { insertEvents } from '../../db/outbox/events.js'
import {
  getConfigureTarget,
  liftReconfigFence,
  takeReconfigFence,
  type ReconfigTarget,
} from '../../db/reconfig-fence.js'
import { deviceConfigureEvent, layoutView } from '../../domain/configure-events.js'
import { CustodyKind } from '../../domain/custody/custody.js'
import type { DeviceConfigChange, DeviceLayout } from '../../domain/device-config.js'
import { ConflictError, DriverError, UnavailableError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import type { Logger } from '../../domain/logger.js'
import type { PlacementClient } from '../../openstack/placement.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ConfigureOutcome } from '../../rpc/conductor-rpc.js'
import { appendReconfigRecord, type Who } from '../../db/reconfig-record.js'
import { isNoAnswer } from './reconfig-sweep.js'
import { checkDeviceConfigure } from '../validate.js'

export interface DeviceConfigureDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  /** The agent client for the change (its time limit is `[conductor] reconfigure_timeout`). */
  reconfigAgentFor: (host: string) => Pick<AgentRpc, 'configureDevice'>
  agentFor: (host: string) => Pick<AgentRpc, 'discover'>
  placement: PlacementClient | undefined
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  now: () => string
  uuid: () => string
}

/** How the agent's change ended. */
type Ending =
  | { kind: 'done'; previous: DeviceLayout; applied: DeviceLayout; changed: boolean }
  | { kind: 'refused'; err: unknown }
  | { kind: 'failed'; err: unknown; restored: boolean | null }

export function createDeviceConfigure(deps: DeviceConfigureDeps) {
  const { db, committer, now } = deps
  const log = deps.log.child({ component: 'configure' })

  /** 409 when Placement has allocations against a provider of the device (units reserved first). */
  const checkPlacement = async (target: ReconfigTarget) => {
    if (!deps.placement) return
    const rps = await db.db
      .selectFrom('deployables')
      .select(['name', 'rp_uuid'])
      .where('device_id', '=', target.deviceId)
      .where('rp_uuid', 'is not', null)
      .execute()
    const used: string[] = []
    for (const rp of rps) {
      const usages = await deps.placement.getUsages(rp.rp_uuid!)
      if (usages && Object.values(usages).some((n) => n > 0)) used.push(rp.name)
    }
    if (used.length > 0)
      throw new ConflictError(
        `cannot configure device ${target.deviceUuid}: Placement has allocations against ${used.join(', ')}`,
        { code: 'RECONFIG_UNITS_HELD', details: { holders: used } },
      )
  }

  const finish = async (
    trx: WriteTrx,
    job: { target: ReconfigTarget; operation: string; change: DeviceConfigChange; ending: Ending },
    who: Who,
  ) => {
    const { target, operation, change, ending } = job
    const at = now()
    await liftReconfigFence(trx, operation, at)
    const reason = ending.kind === 'done' ? null : errorMessage(ending.err)
    // The device's health: a success lifts a configure's fence, a failure that could not restore
    // the old layout fences it (load → decide → apply).
    if (ending.kind === 'done' || (ending.kind === 'failed' && ending.restored === false)) {
      const cur = await getDeviceHealth(trx, target.deviceId)
      const change = cur && healthAfterConfigure(cur, reason)
      if (change) await applyHealthChange(trx, target.hostname, change, at)
    }
    const done = ending.kind === 'done' ? ending : undefined
    const restored = ending.kind === 'failed' ? ending.restored : null
    const detail = {
      operation_uuid: operation,
      change: layoutView(change),
      previous: layoutView(done?.previous ?? null),
      applied: layoutView(done?.applied ?? null),
      result: reason ?? 'ok',
      restored,
    }
    const recordUuid =
      ending.kind === 'refused'
        ? null
        : await appendReconfigRecord(trx, {
            uuid: deps.uuid(),
            kind: CustodyKind.Configure,
            target,
            deployableUuid: null,
            who,
            detail,
            at,
          })
    const facts = await getDeviceFacts(trx, target.deviceUuid)
    if (facts) {
      const configure = {
        operationUuid: operation,
        change,
        ...who,
        reason,
        restored,
        previous: done?.previous ?? null,
        applied: done?.applied ?? null,
        custodyRecordUuid: recordUuid,
      }
      const action = done ? 'configured' : 'configure_failed'
      await insertEvents(trx, [deviceConfigureEvent(action, facts, configure, at)])
    }
  }

  return async function configureDevice(req: unknown): Promise<ConfigureOutcome> {
    const checked = checkDeviceConfigure(req)
    const who = { userId: checked.userId ?? null, projectId: checked.projectId ?? null }
    const change = checked.change as DeviceConfigChange
    const target = await getConfigureTarget(db.db, checked.uuid.toLowerCase())
    const host = target.hostname
    const operation = deps.uuid()
    const fence = (trx: WriteTrx) =>
      takeReconfigFence(trx, {
        deployableIds: target.deployables.map((d) => d.id),
        operationUuid: operation,
        kind: 'configure',
        now: now(),
        what: `configure device ${target.deviceUuid}`,
      })
    await committer.run(fence)
    const ctx = { device: target.deviceUuid, host, change, operation, user: who.userId }
    try {
      await deps.syncPlacement(host)
      await checkPlacement(target)
    } catch (err) {
      await committer.run((trx) => liftReconfigFence(trx, operation, now()))
      await deps.syncPlacement(host)
      throw err
    }
    log.info(ctx, 'configuring a device')
    let ending: Ending
    try {
      const out = await deps
        .reconfigAgentFor(host)
        .configureDevice({ controlPath: target.controlPath, change })
      ending = { kind: 'done', previous: out.previous, applied: out.applied, changed: out.changed }
    } catch (err) {
      ending =
        err instanceof DriverError
          ? { kind: 'failed', err, restored: restoredOf(err) }
          : isNoAnswer(err)
            ? { kind: 'failed', err, restored: null }
            : { kind: 'refused', err }
    }
    if (ending.kind === 'failed') {
      try {
        await deps.agentFor(host).discover({})
      } catch (err) {
        log.error({ ...ctx, err }, 'no answer from the agent: the units stay out of service')
        throw new UnavailableError(
          `the agent of ${host} did not answer (${errorMessage(ending.err)}); the units of device ` +
            `${target.deviceUuid} stay out of service until it rediscovers the device`,
          { code: 'CONFIGURE_UNCONFIRMED', details: { operation } },
        )
      }
    }
    await committer.run((trx) => finish(trx, { target, operation, change, ending }, who))
    await deps.syncPlacement(host)
    if (ending.kind !== 'done') {
      log.warn({ ...ctx, err: ending.err }, 'configure failed')
      throw ending.err
    }
    log.info({ ...ctx, previous: ending.previous, applied: ending.applied }, 'device configured')
    return {
      device: target.deviceUuid,
      operation,
      changed: ending.changed,
      previous: ending.previous,
      applied: ending.applied,
    }
  }
}

/** A driver's CONFIGURE_FAILED says whether the old layout is back; unknown otherwise. */
function restoredOf(err: DriverError): boolean | null {
  const restored = err.details?.restored
  return typeof restored === 'boolean' ? restored : null
}
