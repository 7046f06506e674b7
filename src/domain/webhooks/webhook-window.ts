/**
 * Which of an endpoint's pending deliveries may be in flight together (docs/webhooks.md, Order):
 * at most `max`, all due, each about a different resource and the first of its resource still
 * unsent. So each resource's events reach the receiver in the order of its changes, while events
 * of different resources overlap. `max` = 1 gives strict queue order.
 */

/** A queued delivery, as far as windowing needs it. */
export interface Queued {
  /** What it is about (`deliveryResource` of its body). */
  resource: string
  /** When it is due (an ISO timestamp). */
  nextAttemptAt: string
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

export interface Run<T> {
  /** The deliveries to send together. */
  run: T[]
  /** Set when the run stopped at a delivery not yet due: when it is. */
  dueAt?: string
}

/**
 * The run to send next from `pending` (an endpoint's unsent deliveries, in queue order) at `now`
 * (an ISO timestamp): each resource's first delivery, in queue order, up to `max`, up to the first
 * delivery not yet due (a failed one waiting for its retry holds back all that follow it).
 * Resources in `busy` (a delivery of theirs is in flight) are skipped.
 */
export function nextRun<T extends Queued>(
  pending: readonly T[],
  max: number,
  now: string,
  busy: ReadonlySet<string> = new Set(),
): Run<T> {
  const run: T[] = []
  const seen = new Set<string>(busy)
  for (const d of pending) {
    if (run.length >= max) break
    if (d.nextAttemptAt > now) return { run, dueAt: d.nextAttemptAt }
    if (seen.has(d.resource)) continue
    seen.add(d.resource)
    run.push(d)
  }
  return { run }
}
