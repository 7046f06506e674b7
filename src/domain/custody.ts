/**
 * The custody ledger (issue 18, part 4; docs/custody.md): one record per allocation interval of a
 * device (who held it, how, from when to when), plus clean, override and checkpoint records, in
 * one hash chain. Pure: the record hash, the checkpoint signature and the chain verifier.
 *
 * A record's hash is `sha256(prev_hash + "\n" + JSON.stringify([format, seq, uuid, kind, …fields]))`
 * over the fields in the fixed order of `HASHED_FIELDS`, so that the text hashed is canonical
 * without sorting keys (1,000,000 records verify in a few seconds). The first record's prev_hash
 * is `GENESIS_HASH`; after pruning, the chain starts at the newest signed checkpoint's
 * `through_seq + 1`, whose prev_hash is the checkpoint's `through_hash`.
 */
import { createPublicKey, hash, sign, verify, type KeyObject } from 'node:crypto'

/** The hashing format, hashed into every record: a change of format is a change of version. */
export const CUSTODY_FORMAT = 1

/** prev_hash of the first record of a ledger never pruned. */
export const GENESIS_HASH = '0'.repeat(64)

export const CustodyKind = {
  /** An allocation interval that ended (unbind, delete, Nova deleting the instance's, v1 detach). */
  Allocation: 'allocation',
  /** The clean of the device after an allocation (`allocation_uuid` names it): issue 18 part 2. */
  Clean: 'clean',
  /** An operator put the unit back in service without a clean (`--force-in-service`). */
  Override: 'override',
  /** An operator programmed a deployable (`detail`: image, operation, result). Issue 19. */
  Program: 'program',
  /** An operator re-partitioned a device (`detail`: the change, before and after, result). */
  Configure: 'configure',
  /** Pruning: the signed hash of the last record deleted (`detail`). */
  Checkpoint: 'checkpoint',
} as const
export type CustodyKind = (typeof CustodyKind)[keyof typeof CustodyKind]
export const CUSTODY_KINDS: readonly CustodyKind[] = Object.values(CustodyKind)

export const AllocatedVia = {
  NovaV2: 'nova_v2',
  StandaloneV2: 'standalone_v2',
  V1Attach: 'v1_attach',
} as const
export type AllocatedVia = (typeof AllocatedVia)[keyof typeof AllocatedVia]

/** The fields every record carries besides its chain position; null where a kind has none. */
export interface CustodyFields {
  uuid: string
  kind: CustodyKind
  /** clean and override records: the allocation record they follow. */
  allocationUuid: string | null
  arqUuid: string | null
  deviceUuid: string | null
  deployableUuid: string | null
  handleUuid: string | null
  /** The device's serial, when its identity is one (device_identities `serial:…`). */
  deviceSerial: string | null
  hostname: string | null
  projectId: string | null
  /** Not known to the conductor today (the API does not pass the caller's user on binds). */
  userId: string | null
  instanceUuid: string | null
  allocatedVia: AllocatedVia | null
  /** When the request became Bound; null when not known (an UnbindFailed or Deleting request). */
  boundAt: string | null
  releasedAt: string | null
  cleanMethod: string | null
  cleanResult: string | null
  /** sha256 (hex) of the driver's clean output. */
  cleanEvidenceSha256: string | null
  cleanedAt: string | null
  /** Canonical JSON of kind-specific data (a checkpoint's `CheckpointDetail`). */
  detail: string | null
  createdAt: string
}

/** A record in the chain (sealed: seq and hashes set). */
export interface CustodyRecord extends CustodyFields {
  seq: number
  prevHash: string
  hash: string
}

/**
 * A record as the verifier reads it from a packed page (src/db/custody-packed.ts): what the checks
 * read, and `values`, every hashed value in hashing order (uuid, kind, then HASHED_FIELDS), so
 * that no object of every field is built per record. The hash is the same (custodyHashOfValues).
 */
export interface PackedCustodyRecord extends Pick<
  CustodyRecord,
  'seq' | 'prevHash' | 'hash' | 'uuid' | 'kind' | 'detail'
> {
  values: readonly (string | null)[]
}

/** What the verifier walks: whole records, or packed ones. */
export type VerifiableCustodyRecord = CustodyRecord | PackedCustodyRecord

/** The hashed fields, in hashing order (after format, seq, uuid and kind). */
export const HASHED_FIELDS = [
  'allocationUuid',
  'arqUuid',
  'deviceUuid',
  'deployableUuid',
  'handleUuid',
  'deviceSerial',
  'hostname',
  'projectId',
  'userId',
  'instanceUuid',
  'allocatedVia',
  'boundAt',
  'releasedAt',
  'cleanMethod',
  'cleanResult',
  'cleanEvidenceSha256',
  'cleanedAt',
  'detail',
  'createdAt',
] as const satisfies readonly (keyof CustodyFields)[]

/** The hash of `fields` at position `seq` after a record whose hash is `prevHash`. */
export function custodyHash(prevHash: string, seq: number, fields: CustodyFields): string {
  const values: (string | null)[] = [fields.uuid, fields.kind]
  for (const f of HASHED_FIELDS) values.push(fields[f])
  return custodyHashOfValues(prevHash, seq, values)
}

/** The same hash over `values`: uuid, kind, then the HASHED_FIELDS, in that order. */
export function custodyHashOfValues(
  prevHash: string,
  seq: number,
  values: readonly (string | null)[],
): string {
  // One-shot `hash` (Node 21.7+): no Hash object per record.
  // The text of JSON.stringify([CUSTODY_FORMAT, seq, ...values]), without copying `values`.
  const json = `[${CUSTODY_FORMAT},${seq},${JSON.stringify(values).slice(1)}`
  return hash('sha256', prevHash + '\n' + json, 'hex')
}

const hashOf = (r: VerifiableCustodyRecord) =>
  'values' in r
    ? custodyHashOfValues(r.prevHash, r.seq, r.values)
    : custodyHash(r.prevHash, r.seq, r)

/** Seals `fields` in order after `head` (undefined: the chain is empty). */
export function sealCustody(
  head: { seq: number; hash: string } | undefined,
  fields: readonly CustodyFields[],
): CustodyRecord[] {
  let seq = head?.seq ?? 0
  let prevHash = head?.hash ?? GENESIS_HASH
  return fields.map((f) => {
    seq++
    const hash = custodyHash(prevHash, seq, f)
    const record = { ...f, seq, prevHash, hash }
    prevHash = hash
    return record
  })
}

/** What a checkpoint record's `detail` holds. */
export interface CheckpointDetail {
  /** The last record pruned, and its hash: the chain goes on at `throughSeq + 1`. */
  throughSeq: number
  throughHash: string
  /** Records deleted by this prune. */
  pruned: number
  /** Records older than this were pruned. */
  cutoff: string
  /** The signer's Ed25519 public key (SPKI DER, base64). */
  publicKey: string
  /** Ed25519 signature (base64) of `checkpointMessage`. */
  signature: string
}

/** The text a checkpoint signs. */
export function checkpointMessage(
  d: Pick<CheckpointDetail, 'throughSeq' | 'throughHash' | 'pruned' | 'cutoff'>,
): Buffer {
  return Buffer.from(
    `cyborg-custody-checkpoint:v${CUSTODY_FORMAT}\n${d.throughSeq}\n${d.throughHash}\n${d.pruned}\n${d.cutoff}`,
  )
}

/** A signed checkpoint detail, made with `privateKey` (Ed25519). */
export function signCheckpoint(
  privateKey: KeyObject,
  d: Pick<CheckpointDetail, 'throughSeq' | 'throughHash' | 'pruned' | 'cutoff'>,
): CheckpointDetail {
  const publicKey = createPublicKey(privateKey).export({ type: 'spki', format: 'der' })
  return {
    ...d,
    publicKey: publicKey.toString('base64'),
    signature: sign(null, checkpointMessage(d), privateKey).toString('base64'),
  }
}

/** Whether a checkpoint's signature is good (for the key it names, or `pinned` when given). */
export function checkpointSignatureOk(d: CheckpointDetail, pinned?: KeyObject): boolean {
  try {
    const key =
      pinned ??
      createPublicKey({ key: Buffer.from(d.publicKey, 'base64'), format: 'der', type: 'spki' })
    if (pinned) {
      const named = Buffer.from(d.publicKey, 'base64')
      if (!named.equals(pinned.export({ type: 'spki', format: 'der' }))) return false
    }
    return verify(null, checkpointMessage(d), key, Buffer.from(d.signature, 'base64'))
  } catch {
    return false
  }
}

/** Parses a checkpoint record's detail; undefined when it is not one. */
export function checkpointDetail(
  record: Pick<CustodyFields, 'kind' | 'detail'>,
): CheckpointDetail | undefined {
  if (record.kind !== CustodyKind.Checkpoint || record.detail === null) return undefined
  try {
    const d = JSON.parse(record.detail) as Partial<CheckpointDetail>
    if (
      typeof d.throughSeq !== 'number' ||
      typeof d.throughHash !== 'string' ||
      typeof d.pruned !== 'number' ||
      typeof d.cutoff !== 'string' ||
      typeof d.publicKey !== 'string' ||
      typeof d.signature !== 'string'
    )
      return undefined
    return d as CheckpointDetail
  } catch {
    return undefined
  }
}

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
   * A segment of the chain that does not start it (src/domain/custody-segments.ts): the first
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
            `the chain starts at seq ${r.seq} but checkpoint seq ${options.anchor.seq} pruned through seq ${anchorDetail.throughSeq}: records ${anchorDetail.throughSeq + 1}..${r.seq - 1} missing`,
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
