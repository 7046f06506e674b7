/**
 * Verifying in segments gives the single walk's answer (src/domain/custody/custody-segments.ts): the chain,
 * read in seq order as the database gives it, is cut at several seqs, each part walked on its own
 * and the parts joined; intact, edited, with a record deleted or two records swapped on either
 * side of the cut or at it, the joined result is the single walk's, break and counts included.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CustodyKind, sealCustody, type CustodyRecord } from './custody.js'
import { createCustodyVerifier, verifyCustodyChain } from './custody-verify.js'
import { joinCustodySegments } from './custody-segments.js'

const uuid = (n: number) => `c0570d10-0000-4000-8000-${String(n).padStart(12, '0')}`
const records = sealCustody(
  undefined,
  Array.from({ length: 400 }, (_, n) => ({
    uuid: uuid(n),
    kind: CustodyKind.Allocation,
    allocationUuid: null,
    arqUuid: uuid(1_000 + n),
    deviceUuid: uuid(2_000 + (n % 7)),
    deployableUuid: null,
    handleUuid: null,
    deviceSerial: null,
    hostname: `host-${n % 3}`,
    projectId: 'p',
    userId: null,
    instanceUuid: null,
    allocatedVia: 'standalone_v2',
    boundAt: null,
    releasedAt: null,
    cleanMethod: null,
    cleanResult: null,
    cleanEvidenceSha256: null,
    cleanedAt: null,
    detail: null,
    createdAt: '2026-11-26T00:00:00.000000+00:00',
  })),
)

/**
 * Cuts `stored` (sorted by seq, as read) after each seq of `cuts`, walks the parts, joins them. As
 * the CLI does, the first part is the one holding the first record (parts before it are dropped).
 */
function inSegments(stored: readonly CustodyRecord[], cuts: readonly number[]) {
  const sorted = [...stored].sort((a, b) => a.seq - b.seq)
  const bounds = [-Infinity, ...cuts, Infinity]
  const parts = bounds
    .slice(1)
    .map((through, i) => sorted.filter((r) => r.seq > bounds[i]! && r.seq <= through))
  const results = parts.slice(parts.findIndex((p) => p.length > 0)).map((part, i) => {
    const v = createCustodyVerifier({ segment: i > 0 })
    v.push(part)
    return v.result()
  })
  return joinCustodySegments(results)
}

const edit = (at: number) => {
  const out = records.slice()
  out[at] = { ...out[at]!, projectId: 'other' }
  return out
}
const without = (at: number) => records.filter((_, i) => i !== at)
const swapStored = (a: number, b: number) => {
  const out = records.slice()
  out[a] = { ...records[b]!, seq: records[a]!.seq }
  out[b] = { ...records[a]!, seq: records[b]!.seq }
  return out
}

void describe('custody verify in segments', () => {
  const variants: [string, CustodyRecord[]][] = [
    ['intact', records],
    ['an edit before the cut', edit(50)],
    ['an edit after the cut', edit(350)],
    ['an edit of the first record after the cut', edit(200)],
    ['the first record after the cut deleted', without(200)],
    ['the last record before the cut deleted', without(199)],
    ['the first record deleted', without(0)],
    ['two records swapped across the cut', swapStored(150, 250)],
    ['two records swapped at the cut', swapStored(199, 200)],
  ]
  for (const [name, stored] of variants) {
    it(`gives the single walk's result: ${name}`, () => {
      const single = verifyCustodyChain([...stored].sort((a, b) => a.seq - b.seq))
      for (const cuts of [[200], [1], [399], [100, 200, 300], [200, 201]]) {
        assert.deepStrictEqual(inSegments(stored, cuts), single, `cut after ${cuts.join(', ')}`)
      }
    })
  }

  it('needs at least one segment, the first holding the first record', () => {
    assert.throws(() => joinCustodySegments([]), TypeError)
    const v = createCustodyVerifier({ segment: true })
    v.push(records.slice(10))
    const empty = createCustodyVerifier().result()
    assert.throws(() => joinCustodySegments([empty, v.result()]), /first record/)
  })
})
