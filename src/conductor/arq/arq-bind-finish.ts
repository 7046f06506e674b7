/**
 * A bind's second phase, outside the bind's transaction (arq-bind.ts): program the FPGA when the
 * request group asks (arq-program.ts), have the host's agent prepare the device, allocate in
 * Placement when standalone, then Bound; any failure is BindFailed and frees the handle. Then Nova
 * hears how the bind's requests ended, in one batch. Module functions over `BindFinishDeps`.
 */
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { updateArqStates } from '../../db/arqs.js'
import { releaseAttachHandle } from '../../db/attach-handles.js'
import { recordArqAction } from '../../db/outbox/arq-events.js'
import type { Arq, ArqSpec } from '../../domain/arq.js'
import { mdevUuidOf } from '../../domain/inventory/inventory.js'
import { errorMessage } from '../../domain/error-message.js'
import type { Logger } from '../../domain/logger.js'
import type { NovaClient } from '../../openstack/nova.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ArqBindOutcome, ArqBindRequest } from '../../rpc/conductor-rpc.js'
import type { ArqAllocator } from './arq-allocations.js'
import { rcOf, type Placed } from './arq-claim.js'
import { pciAddress, type createFpgaProgrammer } from './arq-program.js'

export interface BindFinishDeps {
  committer: Pick<GroupCommitter, 'run'>
  /** The agent of a host; without it only handles that need no preparation (TEST_PCI) bind. */
  agentFor?: ((host: string) => Pick<AgentRpc, 'prepare' | 'createMdev'>) | undefined
  /** Standalone with Placement (no Nova): bound accelerators are allocated by the conductor. */
  allocator?: ArqAllocator | undefined
  /** Programs the FPGA a request group names (arq-program.ts). */
  program: ReturnType<typeof createFpgaProgrammer>
  nova?: NovaClient | undefined
  log: Logger
  now: () => string
}

/**
 * Has the host's agent make the device ready for the VM; nothing for TEST_PCI. An mdev is created
 * here (uuid `mdevUuidOf(handle)`) unless `novaCreatesMdev`: Nova's libvirt driver (2026.2) creates
 * the mdev of an MDEV request itself from `attach_handle_info` and `attach_handle_uuid`, and the
 * kernel refuses a second mdev with one uuid (EEXIST), so a Nova bind leaves it to Nova (docs/nova.md).
 */
export async function prepareHandle(
  deps: Pick<BindFinishDeps, 'agentFor'>,
  host: string,
  handle: { uuid: string; type: string; info: Record<string, string>; mdevUuid?: string | null },
  { novaCreatesMdev = false }: { novaCreatesMdev?: boolean } = {},
): Promise<void> {
  if (handle.type === 'TEST_PCI' || (handle.type === 'MDEV' && novaCreatesMdev)) return
  if (!deps.agentFor) throw new Error(`no agent RPC to prepare ${handle.type} handles`)
  const agent = deps.agentFor(host)
  if (handle.type === 'PCI') await agent.prepare({ address: pciAddress(handle.info) })
  else if (handle.type === 'MDEV')
    await agent.createMdev({
      parent: pciAddress(handle.info),
      type: handle.info.asked_type ?? '',
      uuid: mdevUuidOf(handle),
    })
}

/** BindFailed with `reason`, the handle freed, in one transaction with the event. */
export async function failBind(
  deps: Pick<BindFinishDeps, 'committer' | 'log' | 'now'>,
  arq: Arq,
  reason: string,
  handleId?: number,
): Promise<ArqBindOutcome> {
  await deps.committer.run(async (trx) => {
    const at = deps.now()
    const { moved } = await updateArqStates(trx, [arq.uuid], 'BindFailed', {
      now: at,
      set: { attachHandleId: null, deployableId: null },
    })
    await recordArqAction(trx, moved, 'bind_failed', at, { reason })
    if (handleId !== undefined) await releaseAttachHandle(trx, handleId, { now: at })
  })
  deps.log.warn({ arq: arq.uuid, reason }, 'bind failed')
  return { uuid: arq.uuid, state: 'BindFailed', reason }
}

/** The steps of a bind outside the database (program, prepare, allocate), then Bound. */
export async function finishBind(
  deps: BindFinishDeps,
  arq: Arq,
  binding: ArqBindRequest,
  spec: ArqSpec | undefined,
  { target, handle }: Placed,
): Promise<ArqBindOutcome> {
  const { allocator, committer, now } = deps
  const programmed = await deps.program(binding.hostname, target, spec)
  if (programmed !== undefined) return failBind(deps, arq, programmed, handle.id)
  try {
    // With [nova] set, a binding naming Placement's provider is Nova's: its compute host creates
    // the mdev. Standalone (no [nova]) and binds where the conductor chose the unit: the agent.
    const novaCreatesMdev = deps.nova !== undefined && binding.deviceRpUuid !== undefined
    await prepareHandle(deps, binding.hostname, handle, { novaCreatesMdev })
  } catch (err) {
    const reason = `preparing ${pciAddress(handle.info)} failed: ${errorMessage(err)}`
    return failBind(deps, arq, reason, handle.id)
  }
  const rc = rcOf(target)
  if (allocator && target.rpUuid && rc) {
    try {
      await allocator.allocate(
        binding.instanceUuid,
        target.rpUuid,
        rc,
        binding.projectId ?? arq.projectId,
      )
    } catch (err) {
      const reason = `Placement refused the allocation: ${errorMessage(err)}`
      return failBind(deps, arq, reason, handle.id)
    }
  }
  const { count } = await committer.run(async (trx) => {
    const bound = await updateArqStates(trx, [arq.uuid], 'Bound', { now: now() })
    await recordArqAction(trx, bound.moved, 'bound', now())
    return bound
  })
  if (count === 0) {
    if (allocator && target.rpUuid && rc)
      await allocator.release(binding.instanceUuid, target.rpUuid, rc).catch(() => {})
    return failBind(deps, arq, 'the request changed while binding (unbound or deleted)', handle.id)
  }
  return { uuid: arq.uuid, state: 'Bound' }
}

/** Tells Nova, in one batch, how the ARQs of one bind ended (best effort; logged). */
export async function notifyNova(
  deps: Pick<BindFinishDeps, 'nova' | 'log'>,
  outcomes: ArqBindOutcome[],
  bindings: Record<string, ArqBindRequest>,
): Promise<void> {
  if (!deps.nova || outcomes.length === 0) return
  const events = outcomes.map((o) => ({
    instanceUuid: bindings[o.uuid]!.instanceUuid,
    arqUuid: o.uuid,
    status: o.state === 'Bound' ? ('completed' as const) : ('failed' as const),
  }))
  try {
    const result = await deps.nova.sendArqBoundEvents(events)
    if (!result.ok) deps.log.warn({ result }, 'Nova refused some accelerator-request-bound events')
  } catch (err) {
    deps.log.error(
      { err, events: events.length },
      'could not tell Nova that accelerator requests resolved',
    )
  }
}
