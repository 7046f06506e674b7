/**
 * Why a deployable can or cannot take a request group (issue 17): the rules a bind applies, in
 * order, each with a stable name, and the first one that rules a candidate out, or `fits`. Pure:
 * the API's explain (`POST /v2/device_profiles/{name_or_uuid}/explain`, candidates read by
 * src/db/reads/explain.ts) and the conductor's standalone bind (src/conductor/arq/arq-claim.ts) both judge
 * with it, so a failed bind names the same rule that explain shows.
 */
import {
  isFencedHealth as fenced,
  isSilentAgentReason,
  MISSING_REASON,
  silentAgentReason,
} from './health/report.js'
import { DeviceStatus, Lifecycle } from './inventory/inventory.js'
import { quotaReason, type QuotaStanding } from './quota.js'

/** The rules in the order they are applied, then `fits`. */
export const EXPLAIN_RULES = [
  'resource_class',
  'required_trait',
  'forbidden_trait',
  'lifecycle',
  'status',
  'health',
  'lease',
  'removal_pending',
  'quota',
  'no_free_handle',
  'fits',
] as const
export type ExplainRule = (typeof EXPLAIN_RULES)[number]

/** The agent binary whose heartbeat is a host's lease (src/db/service-rows.ts's AGENT_BINARY). */
const AGENT = 'cyborg-agent'

/** What the rules read of a deployable and its device. */
export interface ExplainCandidate {
  name: string
  hostname: string
  /** Key `rc` is the resource class; keys `trait*` are traits. */
  attributes: readonly { key: string; value: string }[]
  lifecycle: string
  lifecycleReason: string | null
  status: string
  health: string
  healthReason: string | null
  removalPending: boolean
  /** The last beat of the host's agent, or null when none ever beat (then the lease is not judged). */
  agentLastSeen: string | null
  /** Its attach handles; left out when the caller claims one itself (the bind). */
  handles?: { total: number; free: number; cleaning?: number }
}

/** One request group as the rules see it: a resource class (null: any) and traits. */
export interface ExplainGroup {
  groupId: number
  resourceClass: string | null
  requiredTraits: readonly string[]
  forbiddenTraits: readonly string[]
}

export interface Verdict {
  rule: ExplainRule
  /** A sentence naming the rule in parentheses, with the remedy where there is one. */
  reason: string
}

export interface JudgeOptions {
  /** An agent whose last beat is before this is past its lease; undefined: leases are not judged. */
  leaseCutoff?: string
  /** The project's standing on a resource class's limit (docs/quota.md); undefined: not limited. */
  quota?: (resourceClass: string | undefined) => QuotaStanding | undefined
}

/** The position of `rule` in EXPLAIN_RULES: how far down the list a candidate got. */
export const ruleRank = (rule: ExplainRule): number => EXPLAIN_RULES.indexOf(rule)

function rcOf(c: ExplainCandidate): string | undefined {
  for (const a of c.attributes) if (a.key === 'rc') return a.value
  return undefined
}

/** Whether one of `c`'s `trait*` attributes has the value `trait`. */
function hasTrait(c: ExplainCandidate, trait: string): boolean {
  for (const a of c.attributes) if (a.value === trait && a.key.startsWith('trait')) return true
  return false
}

function lifecycleReason(c: ExplainCandidate): string {
  const at = `${c.name} is ${c.lifecycle} (lifecycle)`
  switch (c.lifecycle) {
    case Lifecycle.inactive:
      return `${at}; mark it ready first`
    case Lifecycle.error:
      return `${c.name} is in error (lifecycle)${c.lifecycleReason ? `: ${c.lifecycleReason}` : ''}; mark it ready again to retry its install`
    default:
      return `${at}; its agent is installing it, wait until it is active`
  }
}

function handleReason(
  c: ExplainCandidate,
  handles: { total: number; free: number; cleaning?: number },
): string {
  if (handles.total === 0) return `${c.name} has no attach handle (no_free_handle)`
  const cleaning = handles.cleaning ?? 0
  if (cleaning > 0)
    return (
      `no free attach handle on ${c.name} (no_free_handle): ${handles.total - cleaning} of ` +
      `${handles.total} in use and ${cleaning} released but not yet cleaned (docs/cleaning.md)`
    )
  return `no free attach handle on ${c.name} (no_free_handle): all ${handles.total} are in use; unbind or delete a request that holds one`
}

/**
 * The first rule that rules `c` out for `group` (undefined: any group), or `fits`. The rules, in
 * order: resource_class, required_trait, forbidden_trait, lifecycle, status, health, lease,
 * removal_pending, quota (when the caller gives the project's standing), no_free_handle (only when the
 * candidate carries its handle counts). A health fence set by a lease sweep counts as `lease`, and
 * the `failed` health of a device whose deployable vanished while in use as `removal_pending`:
 * the rule named is the cause, not its symptom.
 */
export function judge(
  c: ExplainCandidate,
  group: ExplainGroup | undefined,
  { leaseCutoff, quota }: JudgeOptions = {},
): Verdict {
  if (group) {
    const rc = rcOf(c)
    if (group.resourceClass !== null && rc !== group.resourceClass) {
      const offers = rc === undefined ? 'offers no resource class' : `offers ${rc}`
      return {
        rule: 'resource_class',
        reason: `${c.name} ${offers}, the group asks for ${group.resourceClass} (resource_class)`,
      }
    }
    const missing = group.requiredTraits.find((t) => !hasTrait(c, t))
    if (missing !== undefined) {
      return {
        rule: 'required_trait',
        reason: `${c.name} lacks ${missing}, which the group requires (required_trait)`,
      }
    }
    const forbidden = group.forbiddenTraits.find((t) => hasTrait(c, t))
    if (forbidden !== undefined) {
      return {
        rule: 'forbidden_trait',
        reason: `${forbidden} is forbidden by the group (forbidden_trait), and ${c.name} has it`,
      }
    }
  }
  if (c.lifecycle !== Lifecycle.active) return { rule: 'lifecycle', reason: lifecycleReason(c) }
  if (c.status !== DeviceStatus.enabled) {
    return { rule: 'status', reason: `${c.name} is ${c.status} (status); enable it first` }
  }
  const leaseFence = isSilentAgentReason(c.healthReason)
  const removalFence = c.removalPending && c.healthReason === MISSING_REASON
  if (fenced(c.health) && !leaseFence && !removalFence) {
    const why = c.healthReason ? `: ${c.healthReason}` : ''
    return {
      rule: 'health',
      reason: `${c.name} is fenced (health ${c.health}${why}); it is offered again once it reports healthy`,
    }
  }
  const last = c.agentLastSeen
  const silent = leaseCutoff !== undefined && last !== null && last < leaseCutoff
  if (silent || (fenced(c.health) && leaseFence)) {
    const what = silent ? silentAgentReason(AGENT, c.hostname, last) : c.healthReason
    return {
      rule: 'lease',
      reason: `${what} (lease); ${c.name} is offered again after the agent's next full report`,
    }
  }
  if (c.removalPending) {
    return {
      rule: 'removal_pending',
      reason: `${c.name} is pending removal (removal_pending): it vanished from its host's report and goes once freed`,
    }
  }
  const standing = quota?.(rcOf(c))
  const over = standing && quotaReason(standing)
  if (over) return { rule: 'quota', reason: over }
  if (c.handles !== undefined && c.handles.free === 0) {
    return { rule: 'no_free_handle', reason: handleReason(c, c.handles) }
  }
  const free = c.handles === undefined ? '' : `, ${c.handles.free} free attach handle(s)`
  return { rule: 'fits', reason: `${c.name} fits${free}` }
}

/**
 * Of judged candidates none of which fits, the one that got furthest down the rule list (the
 * first such in the given order), or undefined for none.
 */
export function furthest<T extends { verdict: Verdict }>(judged: readonly T[]): T | undefined {
  let best: T | undefined
  for (const j of judged) {
    if (best === undefined || ruleRank(j.verdict.rule) > ruleRank(best.verdict.rule)) best = j
  }
  return best
}

/**
 * A profile's groups as the rules see them: one entry per `resources:` key of each group (a group
 * without one asks for any class), with its traits.
 */
export function explainGroups(groups: readonly Record<string, string>[]): ExplainGroup[] {
  return groups.flatMap((group, groupId) => {
    const requiredTraits: string[] = []
    const forbiddenTraits: string[] = []
    const classes: string[] = []
    for (const [key, value] of Object.entries(group)) {
      if (key.startsWith('resources:')) classes.push(key.slice('resources:'.length))
      else if (key.startsWith('trait:')) {
        const trait = key.slice('trait:'.length).trim()
        if (value === 'required') requiredTraits.push(trait)
        else if (value === 'forbidden') forbiddenTraits.push(trait)
      }
    }
    const rcs = classes.length === 0 ? [null] : classes
    return rcs.map((resourceClass) => ({
      groupId,
      resourceClass,
      requiredTraits,
      forbiddenTraits,
    }))
  })
}
