/**
 * The custody chain's verifier (docs/custody.md): walks records in seq order and names the first
 * break. Pure; the record hash and the checkpoints are in custody.ts.
 */
import type { KeyObject } from 'node:crypto'
import {
  GENESIS_HASH,
  CustodyKind,
  hashOf,
  checkpointDetail,
  checkpointSignatureOk,
  type CustodyRecord,
  type VerifiableCustodyRecord,
} from './custody.js'

/** Why the chain is broken at a record. */
export type CustodyBreakReason =
  | 'hash_mismatch' // a field of this record, or its hash, was edited
  | 'prev_hash_mismatch' // this record does not follow the one before it: reordered or replaced
  | 'missing_records' // records between the previous seq and this one are gone
  | 'out_of_order' // seq does not increase: records were reordered
  | 'bad_start' // the chain does not start at seq 1 nor right after a valid checkpoint
  | 'bad_checkpoint' // the anchoring checkpoint's signature is not valid

export interface CustodyBreak {
  seq: number
  uuid: string
  reason: CustodyBreakReason
  /** One sentence for an operator, naming the record. */
  message: string
}

export interface CustodyVerifyResult {
  ok: boolean
  /** Records checked (up to and including a break). */
  records: number
  /** Where the verified chain starts (1, or after a checkpoint) and its head. */
  firstSeq: number | null
  head: { seq: number; hash: string } | null
  /** The checkpoint the chain starts from, when it was pruned. */
  anchor: { seq: number; throughSeq: number; publicKey: string } | null
  /** The first broken record; absent when ok. */
  broken?: CustodyBreak
  /** A segment's first record (`segment` verifiers only): its link is checked by the caller. */
  start?: CustodyLink
}

export interface CustodyVerifierOptions {
  /**
   * The newest checkpoint of the ledger (read before the walk): the chain may start right after
   * its `throughSeq`. Its own place in the chain is checked when the walk reaches it.
   */
  anchor?: Pick<CustodyRecord, 'seq' | 'uuid' | 'kind' | 'detail'> | undefined
  /** Checkpoints must be signed by this public key. @default the key each checkpoint names */
  publicKey?: KeyObject | undefined
  /**
   * A segment of the chain that does not start it (src/domain/custody/custody-segments.ts): the first
   * record's link to the one before is left to the caller, which has that record's hash.
   */
  segment?: boolean
}

/**
 * Walks records in seq order (`push` page by page) and keeps the first break: each record's hash
 * is recomputed, its prev_hash must be the previous record's hash, seq must go up by one.
 * `push` returns false once broken (the rest need not be read).
 */
export function createCustodyVerifier(options: CustodyVerifierOptions = {}) {
  const anchorDetail = options.anchor && checkpointDetail(options.anchor)
  let count = 0
  let prev: VerifiableCustodyRecord | undefined
  let firstSeq: number | null = null
  let start: CustodyLink | undefined
  let broken: CustodyBreak | undefined
  const brk = (r: VerifiableCustodyRecord, reason: CustodyBreakReason, message: string) => {
    broken = custodyBreak(r, reason, message)
    return false
  }
  const check = (r: VerifiableCustodyRecord): boolean => {
    count++
    if (!prev) {
      firstSeq = r.seq
      start = { seq: r.seq, uuid: r.uuid, prevHash: r.prevHash }
      if (!options.segment && (r.seq !== 1 || r.prevHash !== GENESIS_HASH)) {
        if (!options.anchor || !anchorDetail)
          return brk(
            r,
            r.seq === 1 ? 'prev_hash_mismatch' : 'bad_start',
            r.seq === 1
              ? 'the first record does not start from the genesis hash'
              : `the chain starts at seq ${r.seq} and no checkpoint covers seq 1..${r.seq - 1}: records missing`,
          )
        if (!checkpointSignatureOk(anchorDetail, options.publicKey))
          return brk(
            r,
            'bad_checkpoint',
            `checkpoint seq ${options.anchor.seq} has a bad signature`,
          )
        if (r.seq !== anchorDetail.throughSeq + 1)
          return brk(
            r,
            'missing_records',
            `the chain starts at seq ${r.seq} but checkpoint seq ${options.anchor.seq} pruned through ` +
              `seq ${anchorDetail.throughSeq}: records ${anchorDetail.throughSeq + 1}..${r.seq - 1} ` +
              `missing`,
          )
        if (r.prevHash !== anchorDetail.throughHash)
          return brk(
            r,
            'prev_hash_mismatch',
            `prev_hash is not the hash checkpoint seq ${options.anchor.seq} signed for seq ${anchorDetail.throughSeq}`,
          )
      }
    } else {
      broken = linkBreak(prev, r)
      if (broken) return false
    }
    if (hashOf(r) !== r.hash)
      return brk(r, 'hash_mismatch', 'its fields do not match its hash: the record was edited')
    if (r.kind === CustodyKind.Checkpoint) {
      const d = checkpointDetail(r)
      if (!d || !checkpointSignatureOk(d, options.publicKey))
        return brk(r, 'bad_checkpoint', 'a checkpoint with a bad signature')
    }
    prev = r
    return true
  }
  return {
    push(records: readonly VerifiableCustodyRecord[]): boolean {
      if (broken) return false
      for (const r of records) if (!check(r)) return false
      return true
    },
    result(): CustodyVerifyResult {
      return {
        ok: broken === undefined,
        records: count,
        firstSeq,
        head: prev ? { seq: prev.seq, hash: prev.hash } : null,
        anchor:
          options.anchor && anchorDetail && firstSeq !== 1
            ? {
                seq: options.anchor.seq,
                throughSeq: anchorDetail.throughSeq,
                publicKey: anchorDetail.publicKey,
              }
            : null,
        ...(broken ? { broken } : {}),
        ...(options.segment && start ? { start } : {}),
      }
    },
  }
}

/** A record's place in the chain, as the record after it must name it. */
export interface CustodyLink {
  seq: number
  uuid: string
  prevHash: string
}

function custodyBreak(
  r: Pick<CustodyRecord, 'seq' | 'uuid'>,
  reason: CustodyBreakReason,
  message: string,
): CustodyBreak {
  return {
    seq: r.seq,
    uuid: r.uuid,
    reason,
    message: `record seq ${r.seq} (${r.uuid}): ${message}`,
  }
}

/** Whether `next` follows `prev` (seq one up, prev_hash its hash); the break at `next` if not. */
export function linkBreak(
  prev: { seq: number; hash: string },
  next: CustodyLink,
): CustodyBreak | undefined {
  if (next.seq <= prev.seq)
    return custodyBreak(next, 'out_of_order', `comes after seq ${prev.seq}: records reordered`)
  if (next.seq !== prev.seq + 1)
    return custodyBreak(
      next,
      'missing_records',
      `records missing between seq ${prev.seq} and seq ${next.seq}`,
    )
  if (next.prevHash !== prev.hash)
    return custodyBreak(
      next,
      'prev_hash_mismatch',
      `prev_hash is not the hash of seq ${prev.seq}: records reordered or replaced`,
    )
  return undefined
}

/** Verifies a whole chain held in memory (tests; the CLI streams through `createCustodyVerifier`). */
export function verifyCustodyChain(
  records: readonly CustodyRecord[],
  options: CustodyVerifierOptions = {},
): CustodyVerifyResult {
  const v = createCustodyVerifier(options)
  v.push(records)
  return v.result()
}
