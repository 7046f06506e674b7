/**
 * Answers kept with the fleet read they were computed from (issue 28): while fleet-reads.ts hands
 * out the same read (nothing was committed since), the same question gets the same bytes, without
 * summing, judging or serialising again. The only other input of capacity's and explain's
 * verdicts is the lease cut-off, which moves with the clock: an answer is kept under the cut-off's
 * rank among the read's agent beats (how many beats are before it), so it is reused only while
 * every agent is on the same side of its lease as when it was computed. A new read (another
 * object) starts empty; at most MAX_ANSWERS are kept per read.
 */

const MAX_ANSWERS = 32

interface Kept {
  /** The distinct agent beats of the read, sorted. */
  beats: string[]
  answers: Map<string, Buffer>
}

const kept = new WeakMap<object, Kept>()

function keptOf(read: object, beatsOf: () => Iterable<string | null>): Kept {
  let k = kept.get(read)
  if (k === undefined) {
    const beats = new Set<string>()
    for (const b of beatsOf()) if (b !== null) beats.add(b)
    k = { beats: [...beats].sort(), answers: new Map() }
    kept.set(read, k)
  }
  return k
}

/** How many of the sorted `beats` are before `cutoff` (each a `last < cutoff` verdict). */
export function rankOf(beats: readonly string[], cutoff: string): number {
  let lo = 0
  let hi = beats.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (beats[mid]! < cutoff) lo = mid + 1
    else hi = mid
  }
  return lo
}

export interface KeptAnswerOptions {
  /** The fleet read the answer is computed from (kept by identity). */
  read: object
  /** Its agents' last beats (null: none), read once per read. */
  beats: () => Iterable<string | null>
  /** Everything else the answer depends on, as a string. */
  question: string
  leaseCutoff: string
  /** Computes the answer's body. */
  compute: () => string
}

/** The body of the answer: kept from an earlier equal question on the same read, else computed. */
export function keptAnswer(o: KeptAnswerOptions): Buffer {
  const k = keptOf(o.read, o.beats)
  const key = `${rankOf(k.beats, o.leaseCutoff)}\n${o.question}`
  let body = k.answers.get(key)
  if (body === undefined) {
    body = Buffer.from(o.compute())
    if (k.answers.size >= MAX_ANSWERS) k.answers.delete(k.answers.keys().next().value!)
    k.answers.set(key, body)
  }
  return body
}
