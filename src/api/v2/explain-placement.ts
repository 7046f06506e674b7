/**
 * Explain's comparison with Placement (issue 17): after the rules have judged, each candidate with
 * a provider gets `placement: offered | not_offered` (what `GET /allocation_candidates` for its
 * group answers) and, where Cyborg's verdict and Placement's disagree, `placement_reason`. The API
 * never calls Placement: it asks the conductor (`placementExplain`, ConductorRpc 1.6), at most
 * twice per request: once for the groups, once for the views of at most DIAGNOSE_LIMIT disagreeing
 * providers. Whatever fails (a conductor older than 1.6, a Placement outage, a slow answer), explain
 * still answers from Cyborg's view, with the failure in the top-level `placement`.
 */
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import type { ExplainGroup, ExplainRule } from '../../domain/explain.js'
import {
  needsView,
  whyNotOffered,
  whyOffered,
  type PlacementExplainResult,
  type PlacementGroupQuery,
  type PlacementProviderView,
} from '../../domain/placement-explain.js'
import { errorMessage } from '../../domain/error-message.js'

/** Disagreeing providers whose Placement view one explain asks for. */
export const DIAGNOSE_LIMIT = 20
/** How long explain waits for each of the conductor's answers. */
export const PLACEMENT_WAIT_MS = 15_000

/** The part of a judged candidate the comparison reads and annotates. */
export interface PlacementCandidate {
  deployable_uuid: string
  rule: ExplainRule
  free_units: number
  placement?: 'offered' | 'not_offered' | null
  placement_reason?: string | null
}

/** What the comparison knows of a candidate besides its verdict. */
export interface CandidateFacts {
  rpUuid: string | null
  traits: readonly string[]
  handles: { total: number; free: number }
}

/** The top-level `placement` of an explain answer; null when the conductor predates 1.6. */
export type PlacementSummary = { configured: boolean; error?: string; note?: string } | null

/** A profile group's amount of `rc` (`resources:RC` = n), 1 when unreadable. */
export function amountOf(groups: readonly Record<string, string>[], g: ExplainGroup): number {
  const n = Number(groups[g.groupId]?.[`resources:${g.resourceClass}`])
  return Number.isInteger(n) && n >= 1 ? n : 1
}

async function ask(
  conductor: ConductorRpc,
  req: Parameters<ConductorRpc['placementExplain']>[0],
): Promise<PlacementExplainResult> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${PLACEMENT_WAIT_MS / 1000} s`)),
      PLACEMENT_WAIT_MS,
    )
  })
  try {
    return await Promise.race([conductor.placementExplain(req), late])
  } finally {
    clearTimeout(timer)
  }
}

const tooOld = (err: unknown) => (err as { code?: unknown }).code === 'RPC_NO_METHOD'

/** The conductor's answer for the groups, or the summary when there is nothing to compare. */
export type GroupsAnswer =
  | { done: PlacementSummary }
  | {
      first: Extract<PlacementExplainResult, { configured: true }>
      asked: { index: number; query: PlacementGroupQuery }[]
    }

/** Asks the conductor which providers Placement offers for each group (the first question). */
export async function askGroups(
  conductor: ConductorRpc,
  groups: readonly ExplainGroup[],
  amounts: readonly number[],
): Promise<GroupsAnswer> {
  const asked: { index: number; query: PlacementGroupQuery }[] = []
  groups.forEach((g, index) => {
    if (g.resourceClass === null) return
    asked.push({
      index,
      query: {
        resourceClass: g.resourceClass,
        amount: amounts[index] ?? 1,
        requiredTraits: [...g.requiredTraits],
        forbiddenTraits: [...g.forbiddenTraits],
      },
    })
  })
  let first: PlacementExplainResult
  try {
    first = await ask(conductor, { groups: asked.map((a) => a.query) })
  } catch (err) {
    if (tooOld(err)) return { done: null }
    return {
      done: { configured: false, error: `the conductor did not answer: ${errorMessage(err)}` },
    }
  }
  if (!first.configured) return { done: { configured: false } }
  return { first, asked }
}

/**
 * Annotates `judged` (one candidate list per group of `groups`, in place) with Placement's answer,
 * and returns the top-level summary.
 */
export async function comparePlacement(
  conductor: ConductorRpc,
  groups: readonly ExplainGroup[],
  amounts: readonly number[],
  judged: readonly PlacementCandidate[][],
  facts: ReadonlyMap<string, CandidateFacts>,
): Promise<PlacementSummary> {
  return compareAnswer(conductor, await askGroups(conductor, groups, amounts), judged, facts)
}

/** Gives every candidate `placement` and `placement_reason` null (what no answer leaves). */
export function clearPlacement(judged: readonly PlacementCandidate[][]): void {
  for (const list of judged)
    for (const c of list) Object.assign(c, { placement: null, placement_reason: null })
}

/** comparePlacement once the groups are asked (`answer`). */
export async function compareAnswer(
  conductor: ConductorRpc,
  answer: GroupsAnswer,
  judged: readonly PlacementCandidate[][],
  facts: ReadonlyMap<string, CandidateFacts>,
): Promise<PlacementSummary> {
  clearPlacement(judged)
  if ('done' in answer) return answer.done
  const { first, asked } = answer

  /** Disagreements that need a provider's view: [candidate, group query, truncated]. */
  const pending: [PlacementCandidate, PlacementGroupQuery, boolean, string][] = []
  asked.forEach(({ index, query }, j) => {
    const offer = first.groups[j]
    if (!offer || offer.offered === null) return
    const offered = new Set(offer.offered)
    for (const c of judged[index] ?? []) {
      const f = facts.get(c.deployable_uuid)
      if (!f?.rpUuid) continue
      const isOffered = offered.has(f.rpUuid)
      c.placement = isOffered ? 'offered' : 'not_offered'
      if (isOffered === (c.rule === 'fits')) continue
      if (needsView(c.rule, isOffered)) pending.push([c, query, offer.truncated, f.rpUuid])
      else c.placement_reason = whyOffered({ rule: c.rule, ...f }, query) ?? null
    }
  })
  const summary: NonNullable<PlacementSummary> = { configured: true }
  if (first.error !== undefined) summary.error = first.error
  if (pending.length === 0) return summary

  const providers = [...new Set(pending.map((p) => p[3]))]
  const chosen = new Set(providers.slice(0, DIAGNOSE_LIMIT))
  if (providers.length > chosen.size)
    summary.note = `${providers.length - chosen.size} of ${providers.length} disagreeing providers were not diagnosed (at most ${DIAGNOSE_LIMIT} per request)`
  let views: Record<string, PlacementProviderView | null> = {}
  try {
    const second = await ask(conductor, { providers: [...chosen] })
    if (second.configured) views = second.providers
    if (second.configured && second.error !== undefined) summary.error ??= second.error
  } catch (err) {
    summary.error ??= `the conductor did not answer: ${errorMessage(err)}`
  }
  for (const [c, query, truncated, rp] of pending) {
    if (!chosen.has(rp) || !(rp in views)) continue
    const view = views[rp] ?? null
    const f = facts.get(c.deployable_uuid)!
    c.placement_reason =
      c.placement === 'offered'
        ? (whyOffered({ rule: c.rule, ...f }, query, view) ?? null)
        : whyNotOffered(view, query, truncated)
  }
  return summary
}
