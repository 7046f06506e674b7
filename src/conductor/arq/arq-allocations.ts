/**
 * Standalone with Placement (no Nova): the conductor itself writes a bound accelerator's allocation
 * to Placement (consumer = the instance), so that Placement stays the truth about what is used.
 * Read-modify-write of the consumer's allocations, checked by consumer generation and retried on
 * a conflict (several ARQs of one instance bind at once).
 */
import type { Logger } from '../../domain/logger.js'
import { GenerationConflict, type PlacementClient } from '../../openstack/placement.js'

const MAX_ATTEMPTS = 8

export interface ArqAllocator {
  /** Adds one `rc` on provider `rp` to the consumer's allocations (Placement refuses beyond capacity). */
  allocate(consumer: string, rp: string, rc: string, projectId: string | null): Promise<void>
  /** Takes one `rc` on `rp` back; the consumer's allocations go when nothing is left. */
  release(consumer: string, rp: string, rc: string): Promise<void>
  /**
   * Takes back what a crash left allocated: each of the consumer's providers that `held` knows
   * (cyborg's) keeps at most as many units as the consumer's requests hold on it. It only ever
   * lowers an allocation, and reads Placement before the database and writes with that generation,
   * so a concurrent bind or unbind is never undone. Resolves with whether it changed anything.
   */
  trim(consumer: string, held: (rps: string[]) => Promise<Map<string, number>>): Promise<boolean>
}

export function createArqAllocator(placement: PlacementClient, log: Logger): ArqAllocator {
  const change = async (
    consumer: string,
    rp: string,
    rc: string,
    delta: number,
    projectId: string | null,
  ) => {
    for (let attempt = 1; ; attempt++) {
      const current = await placement.getAllocations(consumer)
      const resources = { ...(current.allocations[rp] ?? {}) }
      const amount = (resources[rc] ?? 0) + delta
      if (amount > 0) resources[rc] = amount
      else delete resources[rc]
      if (delta < 0 && current.generation === null) return // nothing allocated: already released
      try {
        await placement.setAllocations(consumer, {
          allocations: { ...current.allocations, [rp]: resources },
          generation: current.generation,
          projectId: current.projectId || (projectId ?? 'cyborg-standalone'),
          userId: current.userId || 'cyborg',
        })
        return
      } catch (err) {
        if (!(err instanceof GenerationConflict) || attempt >= MAX_ATTEMPTS) throw err
        log.debug({ consumer, attempt }, 'consumer changed meanwhile; reading it again')
      }
    }
  }
  const trim = async (consumer: string, held: (rps: string[]) => Promise<Map<string, number>>) => {
    for (let attempt = 1; ; attempt++) {
      const current = await placement.getAllocations(consumer)
      if (current.generation === null) return false
      const counts = await held(Object.keys(current.allocations))
      const allocations = { ...current.allocations }
      let changed = false
      for (const [rp, count] of counts) {
        const rcs = Object.entries(allocations[rp] ?? {})
        if (rcs.length !== 1) continue // none, or a provider of several classes: not one of ours
        const [rc, amount] = rcs[0]!
        if (amount <= count) continue
        allocations[rp] = count > 0 ? { [rc]: count } : {}
        changed = true
      }
      if (!changed) return false
      try {
        await placement.setAllocations(consumer, { ...current, allocations })
        log.warn(
          { consumer, before: current.allocations, after: allocations },
          'took back accelerator allocations that no request holds',
        )
        return true
      } catch (err) {
        if (!(err instanceof GenerationConflict) || attempt >= MAX_ATTEMPTS) throw err
      }
    }
  }
  return {
    trim,
    allocate: (consumer, rp, rc, projectId) => change(consumer, rp, rc, 1, projectId),
    release: (consumer, rp, rc) => change(consumer, rp, rc, -1, null),
  }
}
