/**
 * Explain's comparison with Placement (issue 17): what the conductor's `placementExplain` RPC
 * answers (which providers `GET /allocation_candidates` offers for a group, and Placement's view
 * of chosen providers), and the pure sentences that name why Cyborg's verdict and Placement's
 * disagree. Pure: src/conductor/placement-explain.ts asks Placement, src/api/v2/explain-placement.ts
 * compares.
 */
import type { ExplainRule } from './explain.js'

/** One request group as Placement is asked it: one resource class, an amount, and traits. */
export interface PlacementGroupQuery {
  resourceClass: string
  amount: number
  requiredTraits: string[]
  forbiddenTraits: string[]
}

/** What `GET /allocation_candidates` answered for one group. */
export interface PlacementGroupOffer {
  /** The providers an allocation request allocates the group's class from; null: not asked (error). */
  offered: string[] | null
  /** The answer had `limit` allocation requests: providers past it may be offered too. */
  truncated: boolean
  /** Required traits Placement does not know (then nothing is offered, without asking). */
  unknownTraits?: string[]
  /** Why Placement could not be asked for this group. */
  error?: string
}

/** One resource class's inventory on a provider, as Placement holds it. */
export interface PlacementInventory {
  total: number
  reserved: number
  max_unit: number
  min_unit: number
  step_size: number
  allocation_ratio: number
}

/** Placement's view of one provider. */
export interface PlacementProviderView {
  inventories: Record<string, PlacementInventory>
  /** Resource class → amount allocated. */
  usages: Record<string, number>
  traits: string[]
}

/** The answer of `placementExplain`. */
export type PlacementExplainResult =
  | { configured: false }
  | {
      configured: true
      /** One entry per asked group, in order. */
      groups: PlacementGroupOffer[]
      /** Asked provider uuid → its view, or null when Placement has no such provider. */
      providers: Record<string, PlacementProviderView | null>
      /** Placement could not be reached, or failed: what it said. */
      error?: string
    }

/** The rules Placement cannot know of: a provider it offers may still be ruled out by them. */
export const CYBORG_ONLY_RULES: readonly ExplainRule[] = [
  'lifecycle',
  'status',
  'health',
  'lease',
  'removal_pending',
  'quota',
]

/** Cyborg's side of a candidate, as the comparison reads it. */
export interface CyborgSide {
  rule: ExplainRule
  /** The candidate's `trait*` attribute values. */
  traits: readonly string[]
  /** Its free attach handles and their total. */
  handles: { total: number; free: number }
}

/**
 * Why Placement does not offer a provider that Cyborg says fits, from Placement's view of it
 * (null: Placement has no such provider): the first difference found, naming it in parentheses.
 */
export function whyNotOffered(
  view: PlacementProviderView | null,
  group: PlacementGroupQuery,
  truncated: boolean,
): string {
  const rc = group.resourceClass
  if (view === null) return 'Placement has no resource provider for this deployable (provider)'
  const inv = view.inventories[rc]
  if (inv === undefined) return `Placement has no ${rc} inventory on this provider (inventory)`
  const lacks = group.requiredTraits.find((t) => !view.traits.includes(t))
  if (lacks !== undefined) return `Placement lacks trait ${lacks} on this provider (traits)`
  const has = group.forbiddenTraits.find((t) => view.traits.includes(t))
  if (has !== undefined)
    return `Placement has trait ${has} on this provider, which the group forbids (traits)`
  if (inv.reserved >= inv.total)
    return `Placement has ${rc} total ${inv.total}, reserved ${inv.reserved} on this provider (inventory reserved)`
  const used = view.usages[rc] ?? 0
  const capacity = Math.floor((inv.total - inv.reserved) * inv.allocation_ratio)
  const asks = group.amount
  if (capacity - used < asks)
    return `Placement has ${rc} total ${inv.total}, reserved ${inv.reserved}, used ${used} on this provider, the group asks for ${asks} (usage)`
  if (inv.max_unit < asks || inv.min_unit > asks || asks % inv.step_size !== 0)
    return (
      `Placement takes ${rc} in units of ${inv.min_unit} to ${inv.max_unit}, step ${inv.step_size}, ` +
      `on this provider, the group asks for ${asks} (inventory units)`
    )
  if (truncated)
    return `Placement's answer was cut at its limit; this provider may be among the candidates left out (limit)`
  return (
    `Placement's view of this provider (${rc} total ${inv.total}, reserved ${inv.reserved}, ` +
    `used ${used}) should offer it; it may have changed since (unexplained)`
  )
}

/**
 * Why Placement offers a provider that Cyborg rules out. Cyborg's own rules are an expected
 * difference; the others name what Placement has that Cyborg's records do not. `view` is needed
 * only for `no_free_handle` (undefined: not diagnosed).
 */
export function whyOffered(
  cyborg: CyborgSide,
  group: PlacementGroupQuery,
  view?: PlacementProviderView | null,
): string | undefined {
  const { rule } = cyborg
  if (CYBORG_ONLY_RULES.includes(rule))
    return (
      `Placement offers this provider; ${rule} is Cyborg's own rule, which Placement does not ` +
      'judge, so this difference is expected (a bind here is refused)'
    )
  const rc = group.resourceClass
  if (rule === 'resource_class')
    return `Placement has ${rc} inventory on this provider, Cyborg's rc attribute differs (inventory)`
  if (rule === 'required_trait') {
    const t = group.requiredTraits.find((x) => !cyborg.traits.includes(x)) ?? ''
    return `Placement has trait ${t} on this provider, Cyborg's attributes lack it (traits)`
  }
  if (rule === 'forbidden_trait') {
    const t = group.forbiddenTraits.find((x) => cyborg.traits.includes(x)) ?? ''
    return `Placement lacks trait ${t} on this provider, Cyborg's attributes have it (traits)`
  }
  if (rule === 'no_free_handle') {
    if (view === undefined) return undefined
    const inv = view?.inventories[rc]
    const used = view?.usages[rc] ?? 0
    const placement = inv
      ? `Placement has ${rc} total ${inv.total}, reserved ${inv.reserved}, used ${used} on this provider`
      : 'Placement offers this provider'
    return `${placement}, while Cyborg has ${cyborg.handles.total - cyborg.handles.free} of ${cyborg.handles.total} attach handle(s) in use (usage)`
  }
  return undefined
}

/** Whether the comparison of a candidate needs Placement's view of its provider. */
export function needsView(rule: ExplainRule, offered: boolean): boolean {
  return offered ? rule === 'no_free_handle' : rule === 'fits'
}
