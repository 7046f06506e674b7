/**
 * Finds the compute node resource provider that a host's device providers hang under: by
 * `[agent] resource_provider_name`, then by `[DEFAULT] host`. Nova's compute service normally
 * registers it; the agent may start first, so it retries with backoff (1, 2, 4 s) before giving up
 * with a message naming every name it tried. `[placement] create_root_provider` creates it instead.
 */
import { NotFoundError } from '../domain/errors.js'
import { CYBORG_NAMESPACE, uuidV5 } from '../domain/ids.js'
import type { Logger } from '../domain/logger.js'
import { COMPUTE_ACCELERATORS } from '../domain/placement.js'
import type { PlacementClient } from './placement.js'

export interface RootProvider {
  name: string
  uuid: string
}

export interface RootLookup {
  placement: PlacementClient
  /** Names to try, in order (duplicates are tried once). */
  names: string[]
  create: boolean
  log: Logger
  /** Waits between rounds, in ms. @default [1000, 2000, 4000] */
  backoffMs?: number[]
  sleep?: (ms: number) => Promise<void>
}

/** The uuid a created compute node provider gets: the same for the same name, on every conductor. */
export const rootProviderUuid = (name: string) =>
  uuidV5(JSON.stringify(['compute-node', name]), CYBORG_NAMESPACE)

export async function findRootProvider(lookup: RootLookup): Promise<RootProvider> {
  const { placement, log, backoffMs = [1000, 2000, 4000] } = lookup
  const sleep = lookup.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const names = [...new Set(lookup.names.filter((n) => n !== ''))]
  for (let round = 0; ; round++) {
    for (const name of names) {
      const found = await placement.findProviderByName(name)
      if (found) return { name, uuid: found.uuid }
    }
    if (lookup.create) return createRootProvider(placement, names[0]!, log)
    if (round >= backoffMs.length) break
    log.warn(
      { names, retryInMs: backoffMs[round] },
      'no compute node resource provider in Placement yet (is nova-compute running on this host?); retrying',
    )
    await sleep(backoffMs[round]!)
  }
  throw new NotFoundError(
    `Placement at ${placement.endpoint} has no resource provider named ${names.map((n) => `"${n}"`).join(' or ')} ` +
      '(the compute node of this host). Start nova-compute on this host first, set [agent] resource_provider_name ' +
      'to the name its compute node has in Placement, or, without Nova, set [placement] create_root_provider = true.',
    { code: 'PLACEMENT_ROOT_NOT_FOUND', details: { names } },
  )
}

/** Creates the compute node provider with the trait Nova requires of accelerator hosts. */
export async function createRootProvider(
  placement: PlacementClient,
  name: string,
  log: Logger,
): Promise<RootProvider> {
  const uuid = rootProviderUuid(name)
  const created = await placement.createProvider({ uuid, name })
  const root =
    created ?? (await placement.getProvider(uuid)) ?? (await placement.findProviderByName(name))
  if (!root)
    throw new NotFoundError(`could not create or find resource provider "${name}" in Placement`)
  if (created) {
    await placement.setTraits(root.uuid, root.generation, [COMPUTE_ACCELERATORS])
    log.info(
      { name, uuid: root.uuid },
      'created the compute node resource provider ([placement] create_root_provider)',
    )
  }
  return { name, uuid: root.uuid }
}
