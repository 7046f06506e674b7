/**
 * The Placement client: resource providers, inventories, traits and resource classes, at one
 * microversion (1.39, the newest of Placement 8.0.0). Generation conflicts surface as
 * GenerationConflict so that the caller can re-read and retry; everything else as in `http.ts`.
 */
import { OpenStackHttpError, requestJson, type RequestAuth, type ServiceEndpoint } from './http.js'
import { keystoneSettings, type KeystoneSectionOptions } from './service-auth.js'
import {
  allocationCandidates,
  getAllocations,
  setAllocations,
  type AllocationCandidates,
  type AllocationCandidatesQuery,
  type PlacementCall,
  type ConsumerAllocations,
  type PlacementCalls,
} from './placement-allocations.js'

export type {
  AllocationCandidates,
  AllocationCandidatesQuery,
  ConsumerAllocations,
  PlacementCalls,
} from './placement-allocations.js'

export const PLACEMENT_MICROVERSION = '1.39'

export interface ResourceProvider {
  uuid: string
  name: string
  generation: number
  parentProviderUuid: string | null
}

/** One resource class's inventory; Placement defaults the rest (min_unit 1, step 1, ratio 1). */
export interface Inventory {
  total: number
  max_unit: number
  reserved: number
}

/** A write lost a race: the provider's generation changed since it was read. */
export class GenerationConflict extends OpenStackHttpError {}

export interface PlacementSettings {
  endpoint: string
  /** `admin_token`: sent as X-Auth-Token. Undefined for auth_type = none. */
  token?: string
  /** `password`: Keystone tokens, and the catalog's endpoint unless endpoint_override is set. */
  auth?: RequestAuth
  timeoutMs: number
  onCall?: ServiceEndpoint['onCall']
}

export interface PlacementClient {
  /** The base URL (with a catalog lookup: the one of the last call, or a description before it). */
  readonly endpoint: string
  findProviderByName(name: string): Promise<ResourceProvider | null>
  getProvider(uuid: string): Promise<ResourceProvider | null>
  /** Creates a provider; answers null when that uuid or name exists already. */
  createProvider(p: {
    uuid: string
    name: string
    parentUuid?: string | null
  }): Promise<ResourceProvider | null>
  /** Replaces the provider's traits; returns its new generation. */
  setTraits(uuid: string, generation: number, traits: string[]): Promise<number>
  /** Replaces the provider's inventory; returns its new generation. */
  setInventory(
    uuid: string,
    generation: number,
    inventories: Record<string, Inventory>,
  ): Promise<number>
  /** Replaces the inventories of many providers in one call (POST /reshaper, no allocations moved). */
  setInventories(
    entries: { uuid: string; generation: number; inventories: Record<string, Inventory> }[],
  ): Promise<void>
  /** Deletes a provider: `deleted`, `gone` (404), or `in-use` (409: allocations or children remain). */
  deleteProvider(uuid: string): Promise<'deleted' | 'gone' | 'in-use'>
  ensureTrait(name: string): Promise<void>
  ensureResourceClass(name: string): Promise<void>
  getTraits(uuid: string): Promise<string[]>
  getInventories(uuid: string): Promise<Record<string, Inventory>>
  /** Providers of the tree that `uuid` belongs to. */
  listTree(uuid: string): Promise<ResourceProvider[]>
  /** A consumer's allocations, with its generation (null when it has none). */
  getAllocations(consumer: string): Promise<ConsumerAllocations>
  /**
   * Replaces a consumer's allocations (empty: deletes them), checked against `generation`.
   * @throws GenerationConflict when the consumer changed meanwhile; OpenStackHttpError otherwise
   *   (e.g. 409 placement.undefined_code when a provider lacks capacity)
   */
  setAllocations(consumer: string, allocations: ConsumerAllocations): Promise<void>
  /**
   * `GET /allocation_candidates` for one unnumbered group: forbidden traits go as `!TRAIT` in
   * `required` (1.22 on). Placement refuses (400) a trait or resource class it does not know.
   */
  allocationCandidates(q: AllocationCandidatesQuery): Promise<AllocationCandidates>
  /** Which of `names` Placement knows (`GET /traits?name=in:…`). */
  knownTraits(names: string[]): Promise<string[]>
  /** Inventories, usages and traits of a provider; null when Placement has no such provider. */
  getProviderView(uuid: string): Promise<ProviderView | null>
  /** Resource class → amount allocated on a provider; null when Placement has no such provider. */
  getUsages(uuid: string): Promise<Record<string, number> | null>
}

export interface ProviderView {
  inventories: Record<string, Inventory & Record<string, number>>
  /** Resource class → amount allocated. */
  usages: Record<string, number>
  traits: string[]
}

/** Runs a generation-checked write; a 409 concurrent_update becomes GenerationConflict. */
async function checkedWrite(call: PlacementCall, method: string, path: string, body: unknown) {
  try {
    return await call(method, path, body)
  } catch (err) {
    if (
      err instanceof OpenStackHttpError &&
      err.status === 409 &&
      err.apiCode === 'placement.concurrent_update'
    ) {
      throw new GenerationConflict(err.message, err.status, err.apiCode)
    }
    throw err
  }
}

/** What `fn` answers, or null when Placement answered 404. */
async function orNull<T>(fn: () => Promise<T>): Promise<T | null> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof OpenStackHttpError && err.status === 404) return null
    throw err
  }
}

export function createPlacementClient(settings: PlacementSettings): PlacementClient {
  const ep: ServiceEndpoint = {
    service: 'Placement',
    url: settings.endpoint.replace(/\/+$/, ''),
    headers: {
      'openstack-api-version': `placement ${PLACEMENT_MICROVERSION}`,
      ...(settings.token === undefined ? {} : { 'x-auth-token': settings.token }),
    },
    timeoutMs: settings.timeoutMs,
    onCall: settings.onCall,
    auth: settings.auth,
  }
  const call = (method: string, path: string, body?: unknown) => requestJson(ep, method, path, body)
  const write = (method: string, path: string, body: unknown) =>
    checkedWrite(call, method, path, body)
  const calls: PlacementCalls = { call, write }
  const enc = encodeURIComponent

  return {
    get endpoint() {
      return ep.url
    },
    async findProviderByName(name) {
      const { body } = await call('GET', `/resource_providers?name=${enc(name)}`)
      const first = (body as { resource_providers: RawProvider[] }).resource_providers[0]
      return first ? toProvider(first) : null
    },
    getProvider: (uuid) =>
      orNull(async () => toProvider((await call('GET', `/resource_providers/${uuid}`)).body)),
    async createProvider({ uuid, name, parentUuid }) {
      const body = { uuid, name, ...(parentUuid ? { parent_provider_uuid: parentUuid } : {}) }
      try {
        return toProvider((await call('POST', '/resource_providers', body)).body)
      } catch (err) {
        if (err instanceof OpenStackHttpError && err.status === 409) return null
        throw err
      }
    },
    async setTraits(uuid, generation, traits) {
      const { body } = await write('PUT', `/resource_providers/${uuid}/traits`, {
        resource_provider_generation: generation,
        traits,
      })
      return (body as { resource_provider_generation: number }).resource_provider_generation
    },
    async setInventory(uuid, generation, inventories) {
      const { body } = await write('PUT', `/resource_providers/${uuid}/inventories`, {
        resource_provider_generation: generation,
        inventories,
      })
      return (body as { resource_provider_generation: number }).resource_provider_generation
    },
    async setInventories(entries) {
      const inventories = Object.fromEntries(
        entries.map((e) => [
          e.uuid,
          { resource_provider_generation: e.generation, inventories: e.inventories },
        ]),
      )
      await write('POST', '/reshaper', { inventories, allocations: {} })
    },
    async deleteProvider(uuid) {
      try {
        await call('DELETE', `/resource_providers/${uuid}`)
        return 'deleted'
      } catch (err) {
        if (err instanceof OpenStackHttpError && err.status === 404) return 'gone'
        if (err instanceof OpenStackHttpError && err.status === 409) return 'in-use'
        throw err
      }
    },
    async ensureTrait(name) {
      await call('PUT', `/traits/${enc(name)}`)
    },
    async ensureResourceClass(name) {
      await call('PUT', `/resource_classes/${enc(name)}`)
    },
    async getTraits(uuid) {
      const { body } = await call('GET', `/resource_providers/${uuid}/traits`)
      return (body as { traits: string[] }).traits
    },
    async getInventories(uuid) {
      const { body } = await call('GET', `/resource_providers/${uuid}/inventories`)
      return (body as { inventories: Record<string, Inventory> }).inventories
    },
    async listTree(uuid) {
      const { body } = await call('GET', `/resource_providers?in_tree=${uuid}`)
      return (body as { resource_providers: RawProvider[] }).resource_providers.map(toProvider)
    },
    getAllocations: (consumer) => getAllocations(calls, consumer),
    setAllocations: (consumer, a) => setAllocations(calls, consumer, a),
    allocationCandidates: (q) => allocationCandidates(calls, q),
    async knownTraits(names) {
      if (names.length === 0) return []
      const { body } = await call('GET', `/traits?name=in:${names.map(enc).join(',')}`)
      return (body as { traits: string[] }).traits
    },
    getUsages: (uuid) =>
      orNull(
        async () =>
          (
            (await call('GET', `/resource_providers/${enc(uuid)}/usages`)).body as {
              usages: Record<string, number>
            }
          ).usages,
      ),
    getProviderView: (uuid) =>
      orNull(async () => {
        const base = `/resource_providers/${enc(uuid)}`
        const [inv, use, tr] = await Promise.all(
          ['inventories', 'usages', 'traits'].map(
            async (what) => (await call('GET', `${base}/${what}`)).body,
          ),
        )
        return {
          inventories: (inv as { inventories: ProviderView['inventories'] }).inventories,
          usages: (use as { usages: Record<string, number> }).usages,
          traits: (tr as { traits: string[] }).traits,
        }
      }),
  }
}

interface RawProvider {
  uuid: string
  name: string
  generation: number
  parent_provider_uuid?: string | null
}

function toProvider(raw: unknown): ResourceProvider {
  const p = raw as RawProvider
  return {
    uuid: p.uuid,
    name: p.name,
    generation: p.generation,
    parentProviderUuid: p.parent_provider_uuid ?? null,
  }
}

/** The `[placement]` options this client reads (a structural subset of the Config section). */
export type PlacementOptions = KeystoneSectionOptions

/** Settings from `[placement]`, or null when Placement is not configured (embedded mode). */
export const placementSettings = (opts: PlacementOptions): PlacementSettings | null =>
  keystoneSettings('placement', opts, 'placement')
