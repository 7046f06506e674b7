/**
 * Where a bind puts an accelerator request: the deployable behind the provider Nova picked, or
 * (standalone) the first offered deployable on the host that fits the request group, with a free
 * attach handle there claimed (the caller records it on the request: arq-bind.ts). Runs in the
 * bind's transaction.
 */
import { getTargetByProvider, listTargetsOnHost, type BindTarget } from '../../db/arq-targets.js'
import type { WriteTrx } from '../../db/core/group-commit.js'
import { silentAgentReason } from '../lease-sweep.js'
import type { ArqSpec } from '../../domain/arq.js'
import type { AttachHandle } from '../../domain/inventory/inventory.js'
import type { ArqBindRequest } from '../../rpc/conductor-rpc.js'
import { furthest, judge, type Verdict } from '../../domain/explain.js'
import { claimAttachHandle } from '../../db/attach-handles.js'

/** Where a bind put an ARQ: a claimed handle on a target. */
export interface Placed {
  target: BindTarget
  handle: AttachHandle
}

/** The resource class a deployable offers (its `rc` attribute). */
export const rcOf = (t: BindTarget) => t.attributes.find((a) => a.key === 'rc')?.value

/** The verdict of the rules (src/domain/explain.ts) on `target` for the request group. */
const verdictOf = (target: BindTarget, spec: ArqSpec | undefined, leaseCutoff?: string) =>
  judge(target, spec, { leaseCutoff })

/**
 * The reason `target` cannot be claimed because its host's agent is past its lease (a last beat
 * before `leaseCutoff`), or undefined. Checked in the claim's own transaction, so there is no
 * window between a lease running out and the next sweep fencing the devices.
 */
function silentAgent(target: BindTarget | undefined, leaseCutoff: string | undefined) {
  const last = target?.agentLastSeen
  if (target === undefined || leaseCutoff === undefined || last == null || last >= leaseCutoff)
    return undefined
  return silentAgentReason(target.hostname, last)
}

/**
 * Claims a handle for a request (the caller records it on the request), or says why it cannot bind. With `leaseCutoff`,
 * a host whose agent last beat before it is refused, naming the silent agent.
 */
export async function claimHandleForArq(
  trx: WriteTrx,
  binding: ArqBindRequest,
  spec: ArqSpec | undefined,
  now: string,
  leaseCutoff?: string,
): Promise<Placed | { reason: string }> {
  let targets: BindTarget[]
  if (binding.deviceRpUuid) {
    const target = await getTargetByProvider(trx, binding.deviceRpUuid)
    if (!target) return { reason: `no deployable has resource provider ${binding.deviceRpUuid}` }
    if (target.hostname !== binding.hostname)
      return {
        reason: `resource provider ${binding.deviceRpUuid} is on ${target.hostname}, not ${binding.hostname}`,
      }
    const silent = silentAgent(target, leaseCutoff)
    if (silent) return { reason: silent }
    if (target.fence) return { reason: `deployable ${target.name} is fenced (${target.fence})` }
    if (!target.offered) return { reason: `deployable ${target.name} is not active and enabled` }
    targets = [target]
  } else {
    const onHost = await listTargetsOnHost(trx, binding.hostname)
    const silent = silentAgent(onHost[0], leaseCutoff)
    if (silent) return { reason: silent }
    const judged = onHost.map((target) => ({
      target,
      verdict: verdictOf(target, spec, leaseCutoff),
    }))
    targets = judged.filter((j) => j.verdict.rule === 'fits').map((j) => j.target)
    if (targets.length === 0) return { reason: noFit(binding.hostname, judged) }
  }
  for (const target of targets) {
    const handle = await claimAttachHandle(trx, target.deployableId, { now })
    if (handle) return { target, handle }
  }
  const full = `no free attach handle on ${targets.map((t) => t.name).join(', ')} (no_free_handle)`
  return { reason: binding.deviceRpUuid ? full : `no fit on ${binding.hostname}: ${full}` }
}

/**
 * Why nothing on the host fits, naming the rule that stopped the candidate that got furthest down
 * the rule list (`no fit on vm: vm_0000:3b:00.0 is inactive (lifecycle); mark it ready first`).
 */
function noFit(host: string, judged: { target: BindTarget; verdict: Verdict }[]): string {
  const best = furthest(judged)
  return `no fit on ${host}: ${best ? best.verdict.reason : `${host} has no deployable`}`
}

/** Does the bind need anything beyond the database: the agent, an FPGA image, a Placement allocation? */
export function needsMore(
  { target, handle }: Placed,
  spec: ArqSpec | undefined,
  allocating: boolean,
): boolean {
  return (
    handle.type !== 'TEST_PCI' ||
    spec?.accel.bitstream_id !== undefined ||
    spec?.accel.function_id !== undefined ||
    (allocating && target.rpUuid !== null && rcOf(target) !== undefined)
  )
}
