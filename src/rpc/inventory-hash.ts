/**
 * The content hash of an inventory snapshot, part of the agent ↔ conductor contract: the agent
 * sends it, the conductor recomputes it before trusting it to skip a write.
 */
import { createHash } from 'node:crypto'
import { canonicalJson, type DiscoveredDevice } from '../domain/inventory/inventory.js'

/** sha256 (hex) of the canonical JSON of `devices`. */
export function inventoryHash(devices: readonly DiscoveredDevice[]): string {
  return createHash('sha256').update(canonicalJson(devices)).digest('hex')
}
