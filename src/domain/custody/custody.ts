/**
 * The custody ledger (issue 18, part 4; docs/custody.md): one record per allocation interval of a
 * device (who held it, how, from when to when), plus clean, override and checkpoint records, in
 * one hash chain. Pure: the record hash and the checkpoint signature (the chain verifier is
 * custody-verify.ts).
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
 * A record as the verifier reads it from a packed page (src/db/reads/custody-packed.ts): what the checks
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

/** A record's hash, recomputed from its fields (whole or packed). */
export const hashOf = (r: VerifiableCustodyRecord) =>
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
