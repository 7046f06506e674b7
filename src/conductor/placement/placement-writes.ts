/**
 * The write half of the Placement sync (placement-sync.ts): a host's providers, custom names,
 * traits and inventories pushed to Placement, each write with the provider generation this process
 * last saw, re-read after a conflict.
 */
import { NotFoundError } from '../../domain/errors.js'
import type { Logger } from '../../domain/logger.js'
import { isCustomName } from '../../domain/placement.js'
import {
  GenerationConflict,
  type Inventory,
  type PlacementClient,
} from '../../openstack/placement.js'
import { findRootProvider } from '../../openstack/root-provider.js'
import type { ProviderWrite } from './placement-plan.js'

/** Attempts of one generation-checked write. */
const MAX_ATTEMPTS = 5

/** The compute node provider a host's deployables hang under, as the agent resolved it. */
export interface RootHint {
  name: string
  uuid?: string | undefined
}

/** What the writes need, and what this process remembers of Placement between syncs. */
export interface WriteState {
  placement: PlacementClient
  /** The `placement` component's logger. */
  log: Logger
  createRootProvider: boolean
  /** Generations this process last saw; a stale one costs a 409 and a re-read, never a wrong write. */
  generations: Map<string, number>
  /** Custom classes and traits created or being created (never deleted by us); one call each per process. */
  known: Map<string, Promise<void>>
  /** Compute node provider uuids looked up by name. */
  roots: Map<string, string>
}

export async function generationOf(s: WriteState, uuid: string): Promise<number | undefined> {
  const cached = s.generations.get(uuid)
  if (cached !== undefined) return cached
  const p = await s.placement.getProvider(uuid)
  if (p) s.generations.set(uuid, p.generation)
  return p?.generation
}

/** Runs a generation-checked write, re-reading the generation after each conflict. */
async function withGeneration(
  s: WriteState,
  uuid: string,
  fn: (generation: number) => Promise<number | void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const generation = await generationOf(s, uuid)
    if (generation === undefined)
      throw new NotFoundError(`resource provider ${uuid} vanished from Placement`)
    try {
      const next = await fn(generation)
      if (typeof next === 'number') s.generations.set(uuid, next)
      else s.generations.delete(uuid)
      return
    } catch (err) {
      s.generations.delete(uuid)
      if (!(err instanceof GenerationConflict) || attempt >= MAX_ATTEMPTS) throw err
    }
  }
}

/** The compute node provider: as the agent resolved it, else looked up (once per process) by name. */
async function rootUuid(s: WriteState, host: string, hint?: RootHint): Promise<string> {
  if (hint?.uuid) return hint.uuid
  const name = hint?.name ?? host
  const cached = s.roots.get(name)
  if (cached) return cached
  const root = await findRootProvider({
    placement: s.placement,
    names: [name],
    create: s.createRootProvider,
    log: s.log,
    backoffMs: [],
  })
  s.roots.set(name, root.uuid)
  return root.uuid
}

function ensure(
  s: WriteState,
  name: string,
  create: (name: string) => Promise<void>,
): Promise<void> {
  let pending = s.known.get(name)
  if (!pending) {
    pending = create(name)
    s.known.set(name, pending)
    pending.catch(() => s.known.delete(name)) // a failure is tried again by the next sync
  }
  return pending
}

async function ensureNames(s: WriteState, writes: ProviderWrite[]): Promise<void> {
  for (const w of writes) {
    const rc = w.state.resourceClass
    if (isCustomName(rc)) await ensure(s, `rc:${rc}`, () => s.placement.ensureResourceClass(rc))
    for (const t of w.state.traits)
      if (isCustomName(t)) await ensure(s, `trait:${t}`, () => s.placement.ensureTrait(t))
  }
}

function inventoryOf(w: ProviderWrite): Record<string, Inventory> {
  return {
    [w.state.resourceClass]: {
      total: w.state.total,
      max_unit: w.state.total,
      reserved: w.state.reserved,
    },
  }
}

/** Writes the providers' custom names, missing providers, traits and inventories, in that order. */
export async function push(
  s: WriteState,
  host: string,
  hint: RootHint | undefined,
  writes: ProviderWrite[],
): Promise<void> {
  await ensureNames(s, writes)
  await createMissing(s, host, hint, writes)
  for (const w of writes) {
    if (!w.changes.traits) continue
    await withGeneration(s, w.state.uuid, (g) =>
      s.placement.setTraits(w.state.uuid, g, w.state.traits),
    )
  }
  await writeInventories(
    s,
    writes.filter((w) => w.changes.inventory),
  )
}

/** Creates the providers that are new, or that Placement no longer has, under the compute node. */
async function createMissing(
  s: WriteState,
  host: string,
  hint: RootHint | undefined,
  writes: ProviderWrite[],
): Promise<void> {
  for (const w of writes) {
    const exists = !w.create && (await generationOf(s, w.state.uuid)) !== undefined
    if (exists) continue
    const parentUuid = await rootUuid(s, host, hint)
    const created = await s.placement.createProvider({
      uuid: w.state.uuid,
      name: w.state.name,
      parentUuid,
    })
    if (created) s.generations.set(created.uuid, created.generation)
    else if ((await generationOf(s, w.state.uuid)) === undefined) {
      throw new NotFoundError(
        `Placement refused provider ${w.state.name}: the name is taken by another uuid`,
      )
    }
  }
}

/** Writes the inventories of `writes` (those whose inventory changed). */
async function writeInventories(s: WriteState, writes: ProviderWrite[]): Promise<void> {
  if (writes.length === 0) return
  if (writes.length === 1) {
    const [w] = writes as [ProviderWrite]
    await withGeneration(s, w.state.uuid, (g) =>
      s.placement.setInventory(w.state.uuid, g, inventoryOf(w)),
    )
    return
  }
  // Many providers: one reshaper call replaces all their inventories (no allocations move).
  try {
    const entries = []
    for (const w of writes) {
      const generation = await generationOf(s, w.state.uuid)
      if (generation === undefined)
        throw new NotFoundError(`resource provider ${w.state.uuid} vanished`)
      entries.push({ uuid: w.state.uuid, generation, inventories: inventoryOf(w) })
    }
    await s.placement.setInventories(entries)
    for (const w of writes) s.generations.delete(w.state.uuid)
  } catch (err) {
    if (!(err instanceof GenerationConflict)) throw err
    for (const w of writes) {
      s.generations.delete(w.state.uuid)
      await withGeneration(s, w.state.uuid, (g) =>
        s.placement.setInventory(w.state.uuid, g, inventoryOf(w)),
      )
    }
  }
}
