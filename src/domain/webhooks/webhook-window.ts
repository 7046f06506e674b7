/**
 * Which of an endpoint's pending deliveries may be in flight together (docs/webhooks.md, Order):
 * at most `max`, each about a different resource and the first of its resource still unsent. So
 * each resource's events reach the receiver in the order of its changes, while events of different
 * resources overlap. `max` = 1 gives strict queue order. Every delivery handed here is due: while a
 * failed one waits for its retry, the endpoint's backoff (`retry_at`, checked by its claim) holds
 * its whole queue back.
 */

/** A queued delivery, as far as windowing needs it. */
export interface Queued {
  /** What it is about (`deliveryResource` of its body). */
  resource: string
}

/** The resource a delivery's body is about: `type/uuid`, or the whole body if it names none. */
export function deliveryResource(body: string): string {
  try {
    const data = (
      JSON.parse(body) as { data?: { resource_type?: unknown; resource_uuid?: unknown } }
    ).data
    if (typeof data?.resource_uuid === 'string')
      return `${String(data.resource_type)}/${data.resource_uuid}`
  } catch {
    // not JSON: it is its own resource
  }
  return body
}

/**
 * The run to send next from `pending` (an endpoint's unsent deliveries, in queue order): each
 * resource's first delivery, in queue order, up to `max`. Resources in `busy` (a delivery of theirs
 * is in flight) are skipped.
 */
export function nextRun<T extends Queued>(
  pending: readonly T[],
  max: number,
  busy: ReadonlySet<string> = new Set(),
): T[] {
  const run: T[] = []
  const seen = new Set<string>(busy)
  for (const d of pending) {
    if (run.length >= max) break
    if (seen.has(d.resource)) continue
    seen.add(d.resource)
    run.push(d)
  }
  return run
}
