/**
 * v1 attachments in Placement (when `[placement]` is set, with or without Nova): each attachment
 * is its own consumer (its uuid) holding one unit of the accelerator's resource class, so that
 * Placement never offers a unit v1 holds, and Nova's allocations for its instances are never
 * touched. Read-modify-write by consumer generation, as for standalone binds (arq-allocations.ts).
 */
import type { Logger } from '../domain/logger.js'
import type { PlacementClient } from '../openstack/placement.js'
import { createArqAllocator } from './arq/arq-allocations.js'

/** The project Placement records for v1 attachments' consumers. */
export const V1_CONSUMER_PROJECT = 'cyborg-v1-attachments'

export interface V1Placement {
  /** One unit of `rc` on provider `rp` for the attachment; Placement refuses beyond capacity. */
  allocate(attachment: string, rp: string, rc: string): Promise<void>
  /** Takes back everything allocated to the attachment; nothing allocated is fine. */
  release(attachment: string): Promise<void>
}

export function createV1Placement(placement: PlacementClient, log: Logger): V1Placement {
  const allocator = createArqAllocator(placement, log)
  return {
    allocate: (attachment, rp, rc) => allocator.allocate(attachment, rp, rc, V1_CONSUMER_PROJECT),
    async release(attachment) {
      await allocator.trim(attachment, (rps) => Promise.resolve(new Map(rps.map((rp) => [rp, 0]))))
    },
  }
}
