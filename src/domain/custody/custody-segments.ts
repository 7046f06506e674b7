/**
 * Verifying the custody chain in segments, side by side (`cyborg custody verify --workers`,
 * docs/custody.md): each segment is a seq range walked by its own verifier (the first one from
 * the chain's start or checkpoint, the others with `segment: true`), and the results are joined
 * here in seq order. Each record carries its own `prev_hash`, so a segment checks every link
 * inside it; the link between two segments (the seam) is checked when they are joined, with the
 * same rule and the same words as inside one (`linkBreak`). The joined result is the one a single
 * walk gives: the first break in seq order, or the whole chain's head.
 */
import { linkBreak, type CustodyVerifyResult } from './custody-verify.js'

/**
 * Joins the results of consecutive segments, in seq order, into the result of the whole walk.
 * The first segment must start the chain (walked without `segment`, holding the first record);
 * empty segments after it are skipped.
 * @throws TypeError when there is no segment, or when the first one is empty and a later one is not
 * (a segment cannot judge the chain's start)
 */
export function joinCustodySegments(results: readonly CustodyVerifyResult[]): CustodyVerifyResult {
  const [first, ...rest] = results
  if (first === undefined) throw new TypeError('joinCustodySegments: no segment')
  let joined: CustodyVerifyResult = first
  for (const next of rest) {
    if (!joined.ok) break
    if (next.records === 0) continue
    if (joined.head === null)
      throw new TypeError('joinCustodySegments: the first segment must hold the first record')
    const records = joined.records + next.records
    const seam = next.start ? linkBreak(joined.head, next.start) : undefined
    if (seam) {
      joined = { ...joined, ok: false, records: joined.records + 1, broken: seam }
      break
    }
    const { start: _start, ...rest } = next
    joined = {
      ...rest,
      records,
      firstSeq: joined.firstSeq ?? next.firstSeq,
      anchor: joined.anchor,
      head: next.head ?? joined.head,
    }
  }
  return joined
}
