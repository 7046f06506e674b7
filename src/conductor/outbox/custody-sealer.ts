/**
 * The custody sealer (docs/custody.md): releases append their ledger records unsealed, in their own
 * transaction (one statement, src/db/custody.ts); the sealer gives them their place in the hash
 * chain. One pass, holding the sealer lock (one sealer at a time across conductors): read the chain
 * head and up to `batchSize` unsealed records in id order, hash each after the one before, write
 * seq, prev_hash and hash in one UPDATE. Chain order is seal order: a record whose transaction
 * commits late (a lower id than one already sealed) is simply sealed in a later pass.
 *
 * Woken after each commit that appended records, and polls for records a killed conductor left.
 * Until sealed (normally milliseconds after the release commits) a record is not protected.
 *
 * Retention: every `pruneIntervalMs`, sealed records written more than `retainDays` ago are
 * deleted (oldest first, a prefix of the chain) and a checkpoint record, signed with the Ed25519
 * key, names the last one deleted and its hash, in the same transaction; the remaining chain
 * verifies from it.
 */
import type { KeyObject } from 'node:crypto'
import type { DatabaseHandle } from '../../db/core/connection.js'
import {
  appendCustodyRecords,
  deleteCustodyThrough,
  getCustodyTail,
  getPrunableThrough,
  hasUnsealedCustody,
  sealNextCustody,
  takeCustodyWritten,
  withCustodyLock,
} from '../../db/custody.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { CustodyKind, signCheckpoint, type CustodyFields } from '../../domain/custody/custody.js'
import { canonicalJson } from '../../domain/inventory/inventory.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import { newUuid } from '../../domain/ids.js'
import { createPassLoop } from './pass-loop.js'
import { wakeOnWrite } from './wake-on-write.js'

export interface CustodySealerOptions {
  /** Records sealed per pass (one UPDATE per 500). @default 500 */
  batchSize?: number
  /**
   * How long a wake waits for more commits to share its pass (0: the same turn only): at most about
   * 1000 / coalesceMs passes a second; sealing is internal, nobody waits on it. @default 250
   */
  coalesceMs?: number
  /** How often to look for records nobody woke this sealer for. @default 1000 */
  pollIntervalMs?: number
  /** `[custody] retain_days`: sealed records older than this are pruned. @default 400 */
  retainDays?: number
  /** How often pruning runs; 0 never. @default 3600000 */
  pruneIntervalMs?: number
  /** The Ed25519 private key that signs checkpoints; without it nothing is pruned. */
  signingKey?: KeyObject | undefined
}

export interface CustodySealerDeps {
  db: DatabaseHandle
  log: Logger
  clock: Clock
  uuid?: () => string
}

export interface CustodySealer {
  start(): void
  /** Asks for a pass (after a commit that appended records); passes never overlap. */
  wake(): void
  /** Seals until nothing is unsealed (or another sealer holds the lock); resolves with how many. */
  drain(): Promise<number>
  /** Prunes now (tests, the periodic timer); resolves with the records deleted. */
  prune(): Promise<number>
  stop(): Promise<void>
}

type LockedDb = Parameters<Parameters<typeof withCustodyLock>[1]>[0]

/** The checkpoint record that anchors the chain left after a prune. */
function checkpointRecord(uuid: string, detail: unknown, at: string): CustodyFields {
  return {
    uuid,
    kind: CustodyKind.Checkpoint,
    allocationUuid: null,
    arqUuid: null,
    deviceUuid: null,
    deployableUuid: null,
    handleUuid: null,
    deviceSerial: null,
    hostname: null,
    projectId: null,
    userId: null,
    instanceUuid: null,
    allocatedVia: null,
    boundAt: null,
    releasedAt: null,
    cleanMethod: null,
    cleanResult: null,
    cleanEvidenceSha256: null,
    cleanedAt: null,
    detail: canonicalJson(detail),
    createdAt: at,
  }
}

interface PruneDeps {
  db: DatabaseHandle
  log: Logger
  clock: Clock
  uuid: () => string
  signingKey: KeyObject
  batchSize: number
}

/**
 * Deletes the sealed records written before `cutoff` (a prefix of the chain, once all of it is
 * sealed) and writes the signed checkpoint naming the last one deleted, in one transaction.
 */
async function pruneThrough(deps: PruneDeps, trx: LockedDb, cutoff: string): Promise<number> {
  const { clock, signingKey, batchSize, log } = deps
  const through = await getPrunableThrough(trx, cutoff)
  const tail = await getCustodyTail(trx)
  if (!through || tail === undefined || through.seq < tail) return 0
  const pruned = await deleteCustodyThrough(trx, through.seq)
  const at = formatTimestamp(clock.now())
  const detail = signCheckpoint(signingKey, {
    throughSeq: through.seq,
    throughHash: through.hash,
    pruned,
    cutoff,
  })
  await appendCustodyRecords(trx, [checkpointRecord(deps.uuid(), detail, at)])
  // Sealed in this transaction, so that no reader sees the pruned chain without its anchor.
  while ((await sealNextCustody(trx, batchSize)) > 0);
  log.info(
    { pruned, throughSeq: through.seq, cutoff },
    'custody records pruned; checkpoint written',
  )
  return pruned
}

/** Seals what is unsealed, then prunes past `retainDays` under the sealer lock; resolves with how many were deleted. */
async function prune(deps: PruneDeps, drain: () => Promise<number>, retainDays: number) {
  const { db, clock, log } = deps
  await drain()
  const cutoff = formatTimestamp(new Date(clock.now().getTime() - retainDays * 86_400_000))
  const work = (trx: LockedDb) => pruneThrough(deps, trx, cutoff)
  try {
    const held = await withCustodyLock(db, (lockDb) =>
      db.dialect === 'sqlite' ? lockDb.transaction().execute(work) : work(lockDb),
    )
    return held?.value ?? 0
  } catch (err) {
    log.warn({ err }, 'could not prune custody records; the next prune retries')
    return 0
  }
}

export function createCustodySealer(
  deps: CustodySealerDeps,
  options: CustodySealerOptions = {},
): CustodySealer {
  const { db, clock, uuid = newUuid } = deps
  const log = deps.log.child({ component: 'custody-sealer' })
  const {
    batchSize = 500,
    pollIntervalMs = 1000,
    retainDays = 400,
    pruneIntervalMs = 3_600_000,
    signingKey,
    coalesceMs = 250,
  } = options
  const pruneNow = async (): Promise<number> =>
    signingKey
      ? prune({ db, log, clock, uuid, signingKey, batchSize }, () => loop.drain(), retainDays)
      : 0
  const loop = createPassLoop(
    {
      // One batch under the lock: undefined when another sealer holds it, else how many were sealed.
      batch: async () =>
        (await withCustodyLock(db, (lockDb) => sealNextCustody(lockDb, batchSize)))?.value,
      hasWork: () => hasUnsealedCustody(db.db),
      chores:
        pruneIntervalMs > 0 && signingKey ? [{ intervalMs: pruneIntervalMs, run: pruneNow }] : [],
      log,
      messages: {
        failed: 'could not seal custody records; the next pass retries',
        pollFailed: 'could not look for unsealed custody records; next poll retries',
      },
    },
    { batchSize, coalesceMs, pollIntervalMs, lastPass: true },
  )
  return { start: loop.start, wake: loop.wake, drain: loop.drain, prune: pruneNow, stop: loop.stop }
}

/** `committer`, whose `run` wakes the sealer after a commit that appended custody records. */
export function sealingCommitter(committer: GroupCommitter, wake: () => void): GroupCommitter {
  return wakeOnWrite(committer, takeCustodyWritten, wake)
}
