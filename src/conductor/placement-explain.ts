/**
 * `placementExplain` (ConductorRpc 1.6, issue 17): what Placement says of a device profile's
 * groups and of chosen providers, for the API's explain, which never calls Placement itself.
 * Reads Placement only. Per group one `GET /allocation_candidates` (at most CANDIDATE_LIMIT
 * allocation requests), after one `GET /traits` for all the groups' traits (Placement refuses a
 * query naming a trait it does not know); per provider its inventories, usages and traits (at
 * most MAX_PROVIDERS providers, MAX_PARALLEL at a time). A Placement failure is answered as
 * `error`, never thrown: explain still answers from Cyborg's view.
 */
import type { PlacementClient } from '../openstack/placement.js'
import { OpenStackHttpError } from '../openstack/http.js'
import type {
  PlacementExplainResult,
  PlacementGroupOffer,
  PlacementGroupQuery,
  PlacementProviderView,
} from '../domain/placement-explain.js'
import { errorMessage } from '../domain/error-message.js'
import { isValidTrait } from '../domain/placement.js'
import { checkUuid, invalid } from './validate.js'

/** `limit` of each `GET /allocation_candidates`: one allocation request per offering provider. */
export const CANDIDATE_LIMIT = 1000
/** Providers whose view one call may ask for. */
export const MAX_PROVIDERS = 50
/** Groups one call may ask about. */
export const MAX_GROUPS = 32
/** Provider views read from Placement at a time. */
const MAX_PARALLEL = 8

export interface PlacementExplainRequest {
  groups?: PlacementGroupQuery[]
  providers?: string[]
}

function checkNames(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) invalid(field, 'must be an array')
  for (const v of value)
    if (typeof v !== 'string' || !isValidTrait(v)) invalid(field, 'must hold trait names')
  return value as string[]
}

/** Re-checks the request: bounded, well-formed names, uuids. */
export function checkPlacementExplain(req: unknown): Required<PlacementExplainRequest> {
  const r = (req ?? {}) as Record<string, unknown>
  const groups = (r.groups ?? []) as unknown[]
  const providers = (r.providers ?? []) as unknown[]
  if (!Array.isArray(groups) || groups.length > MAX_GROUPS)
    invalid('groups', `must be an array of at most ${MAX_GROUPS}`)
  if (!Array.isArray(providers) || providers.length > MAX_PROVIDERS)
    invalid('providers', `must be an array of at most ${MAX_PROVIDERS}`)
  return {
    groups: groups.map((g, i) => {
      const q = g as Record<string, unknown>
      const rc = q.resourceClass
      if (typeof rc !== 'string' || !isValidTrait(rc))
        invalid(`groups[${i}].resourceClass`, 'must be a resource class name')
      const amount = q.amount
      if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1)
        invalid(`groups[${i}].amount`, 'must be a positive integer')
      return {
        resourceClass: rc,
        amount,
        requiredTraits: checkNames(q.requiredTraits, `groups[${i}].requiredTraits`),
        forbiddenTraits: checkNames(q.forbiddenTraits, `groups[${i}].forbiddenTraits`),
      }
    }),
    providers: providers.map((p, i) => checkUuid(p, `providers[${i}]`)),
  }
}

/** Runs `fn` over `items`, `width` at a time, in order. */
async function mapBounded<T, R>(items: T[], width: number, fn: (t: T) => Promise<R>) {
  const out: R[] = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
  return out
}

export function createPlacementExplain(placement: PlacementClient | undefined) {
  const offerOf = async (
    g: PlacementGroupQuery,
    known: Set<string>,
  ): Promise<PlacementGroupOffer> => {
    const unknownTraits = g.requiredTraits.filter((t) => !known.has(t))
    // A required trait no provider can have: nothing is offered.
    if (unknownTraits.length > 0) return { offered: [], truncated: false, unknownTraits }
    try {
      const answer = await placement!.allocationCandidates({
        resources: { [g.resourceClass]: g.amount },
        required: g.requiredTraits,
        forbidden: g.forbiddenTraits.filter((t) => known.has(t)),
        limit: CANDIDATE_LIMIT,
      })
      return {
        offered: answer.allocated[g.resourceClass] ?? [],
        truncated: answer.requests >= CANDIDATE_LIMIT,
      }
    } catch (err) {
      // A resource class Placement does not know: nothing is offered (a 400 names it).
      if (
        err instanceof OpenStackHttpError &&
        err.status === 400 &&
        /No such resource class/.test(err.message)
      )
        return { offered: [], truncated: false }
      return { offered: null, truncated: false, error: errorMessage(err) }
    }
  }

  return {
    async placementExplain(req: PlacementExplainRequest): Promise<PlacementExplainResult> {
      const { groups, providers } = checkPlacementExplain(req)
      if (!placement) return { configured: false }
      try {
        const names = [
          ...new Set(groups.flatMap((g) => [...g.requiredTraits, ...g.forbiddenTraits])),
        ]
        const known = new Set(await placement.knownTraits(names))
        const [offers, views] = await Promise.all([
          Promise.all(groups.map((g) => offerOf(g, known))),
          mapBounded(providers, MAX_PARALLEL, (uuid) => placement.getProviderView(uuid)),
        ])
        const error = offers.find((o) => o.error !== undefined)?.error
        return {
          configured: true,
          groups: offers,
          providers: Object.fromEntries(
            providers.map((uuid, i) => [uuid, views[i] as PlacementProviderView | null]),
          ),
          ...(error === undefined ? {} : { error }),
        }
      } catch (err) {
        return {
          configured: true,
          groups: groups.map(() => ({ offered: null, truncated: false })),
          providers: {},
          error: errorMessage(err),
        }
      }
    },
  }
}
