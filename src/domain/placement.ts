/**
 * What Placement should hold for one deployable: a child resource provider of the compute node,
 * with one inventory `{RC: total = max_unit = num_accelerators}` and the deployable's traits.
 * Pure; the conductor compares its hash with the one last confirmed written, and sends only what
 * changed.
 *
 * Trait and resource class names: `^[A-Z0-9_]+$`, at most 255 characters (placement api-ref).
 */
import { createHash } from 'node:crypto'

/** What Placement accepts as a trait or resource class name. */
export const TRAIT_PATTERN = /^[A-Z0-9_]+$/

/** Placement's limit on a trait name. */
export const TRAIT_MAX_LENGTH = 255

/** The trait every Cyborg-managed resource provider carries. */
export const OWNER_CYBORG = 'OWNER_CYBORG'

/** The trait Nova requires on the compute node root of an accelerator request. */
export const COMPUTE_ACCELERATORS = 'COMPUTE_ACCELERATORS'

/** True if Placement accepts `name` as a trait. */
export function isValidTrait(name: string): boolean {
  return name.length > 0 && name.length <= TRAIT_MAX_LENGTH && TRAIT_PATTERN.test(name)
}

/** Custom names are created on demand; standard ones (os-traits, os-resource-classes) exist already. */
export const isCustomName = (name: string) => name.startsWith('CUSTOM_')

export interface ProviderState {
  uuid: string
  name: string
  resourceClass: string
  total: number
  /**
   * `total` while the device is not offered (not active, disabled, unhealthy, pending removal);
   * else the units out of service for their clean (docs/cleaning.md).
   */
  reserved: number
  /** Sorted, without duplicates, always with OWNER_CYBORG. */
  traits: string[]
}

export interface DeployableForPlacement {
  rpUuid: string
  name: string
  numAccelerators: number
  attributes: readonly { key: string; value: string }[]
  /** Active, enabled, healthy and not pending removal: its accelerators may be allocated. */
  offered: boolean
  /** Units released but not yet cleaned (`cleaning` or a failed clean): reserved. @default 0 */
  cleaning?: number
}

/**
 * The provider a deployable should have, or a reason why it cannot have one (no valid `rc`
 * attribute, or no accelerators). Invalid trait names are left out and listed in `skipped`.
 */
export function desiredProvider(
  dep: DeployableForPlacement,
): { state: ProviderState; skipped: string[] } | { problem: string } {
  const rc = dep.attributes.find((a) => a.key === 'rc')?.value
  if (!rc || !isValidTrait(rc))
    return { problem: `deployable ${dep.name} has no valid resource class (attribute rc)` }
  if (dep.numAccelerators < 1) return { problem: `deployable ${dep.name} has no accelerators` }
  const skipped: string[] = []
  const traits = new Set([OWNER_CYBORG])
  for (const { key, value } of dep.attributes) {
    if (!key.startsWith('trait')) continue
    if (isValidTrait(value)) traits.add(value)
    else skipped.push(value)
  }
  const total = dep.numAccelerators
  return {
    state: {
      uuid: dep.rpUuid,
      name: dep.name,
      resourceClass: rc,
      total,
      reserved: dep.offered ? Math.min(total, dep.cleaning ?? 0) : total,
      traits: [...traits].sort(),
    },
    skipped,
  }
}

/** A short stable digest of a provider state (stored in `deployables.placement_hash`). */
export function providerHash(state: ProviderState): string {
  const part = (value: unknown) =>
    createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32)
  // Two halves, so that a sync writes only the half that changed (traits, or the inventory).
  return (
    part([state.uuid, state.name, state.resourceClass, state.total, state.reserved]) +
    part(state.traits)
  )
}

/** Which halves of two provider hashes differ; a hash of another form differs in both. */
export function providerHashChanges(
  from: string | null,
  to: string,
): { inventory: boolean; traits: boolean } {
  if (from === null || from.length !== to.length) return { inventory: true, traits: true }
  return {
    inventory: from.slice(0, 32) !== to.slice(0, 32),
    traits: from.slice(32) !== to.slice(32),
  }
}
