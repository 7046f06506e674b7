/**
 * The allocation calls of the Placement client (placement.ts): a consumer's allocations read and
 * replaced (generation-checked), and `GET /allocation_candidates` for one unnumbered group, with
 * the query built and the answer trimmed by pure functions.
 */
import type { requestJson } from './http.js'

export interface AllocationCandidatesQuery {
  /** Resource class → amount. */
  resources: Record<string, number>
  required?: string[]
  forbidden?: string[]
  /** At most this many allocation requests. */
  limit?: number
}

export interface AllocationCandidates {
  /** The providers of `provider_summaries` (with 1.29 on, every provider of a candidate's tree). */
  summaries: string[]
  /** Resource class → the providers an allocation request allocates it from. */
  allocated: Record<string, string[]>
  /** How many allocation requests came back. */
  requests: number
}

/** `GET /allocations/{consumer}` at 1.39, trimmed to what a writer needs. */
export interface ConsumerAllocations {
  /** Provider uuid → resource class → amount. */
  allocations: Record<string, Record<string, number>>
  generation: number | null
  projectId: string
  userId: string
}

/** One call to Placement at the client's endpoint and microversion. */
export type PlacementCall = (
  method: string,
  path: string,
  body?: unknown,
) => ReturnType<typeof requestJson>

/** The client's two ways to call Placement: plain, and generation-checked writes. */
export interface PlacementCalls {
  call: PlacementCall
  /** A generation-checked write: a 409 concurrent_update becomes GenerationConflict. */
  write(method: string, path: string, body: unknown): ReturnType<typeof requestJson>
}

/** `GET /allocations/{consumer}`, trimmed to what a writer needs. */
export async function getAllocations(
  calls: PlacementCalls,
  consumer: string,
): Promise<ConsumerAllocations> {
  const { body } = await calls.call('GET', `/allocations/${consumer}`)
  const raw = body as {
    allocations: Record<string, { resources: Record<string, number> }>
    consumer_generation?: number
    project_id?: string
    user_id?: string
  }
  return {
    allocations: Object.fromEntries(
      Object.entries(raw.allocations).map(([rp, a]) => [rp, a.resources]),
    ),
    generation: raw.consumer_generation ?? null,
    projectId: raw.project_id ?? '',
    userId: raw.user_id ?? '',
  }
}

/** `PUT /allocations/{consumer}`: providers left with no resources are dropped. */
export async function setAllocations(
  calls: PlacementCalls,
  consumer: string,
  a: ConsumerAllocations,
): Promise<void> {
  const allocations = Object.fromEntries(
    Object.entries(a.allocations)
      .filter(([, resources]) => Object.keys(resources).length > 0)
      .map(([rp, resources]) => [rp, { resources }]),
  )
  await calls.write('PUT', `/allocations/${consumer}`, {
    allocations,
    consumer_generation: a.generation,
    project_id: a.projectId,
    user_id: a.userId,
    consumer_type: 'INSTANCE',
  })
}

/** The query string of `GET /allocation_candidates`: forbidden traits go as `!TRAIT` in `required`. */
export function candidatesQuery({
  resources,
  required = [],
  forbidden = [],
  limit,
}: AllocationCandidatesQuery): string {
  const q = new URLSearchParams()
  q.set(
    'resources',
    Object.entries(resources)
      .map(([rc, n]) => `${rc}:${n}`)
      .join(','),
  )
  const traits = [...required, ...forbidden.map((t) => `!${t}`)]
  if (traits.length > 0) q.set('required', traits.join(','))
  if (limit !== undefined) q.set('limit', String(limit))
  return q.toString()
}

/** The summaries, the providers of each resource class and the count of a candidates answer. */
export function trimCandidates(body: unknown): AllocationCandidates {
  const raw = body as {
    allocation_requests: {
      allocations: Record<string, { resources: Record<string, number> }>
    }[]
    provider_summaries: Record<string, unknown>
  }
  const allocated: Record<string, Set<string>> = {}
  for (const r of raw.allocation_requests)
    for (const [rp, a] of Object.entries(r.allocations))
      for (const rc of Object.keys(a.resources)) (allocated[rc] ??= new Set()).add(rp)
  return {
    summaries: Object.keys(raw.provider_summaries),
    allocated: Object.fromEntries(Object.entries(allocated).map(([rc, s]) => [rc, [...s]])),
    requests: raw.allocation_requests.length,
  }
}

/** `GET /allocation_candidates` for one unnumbered group. */
export async function allocationCandidates(
  calls: PlacementCalls,
  query: AllocationCandidatesQuery,
): Promise<AllocationCandidates> {
  const { body } = await calls.call('GET', `/allocation_candidates?${candidatesQuery(query)}`)
  return trimCandidates(body)
}
