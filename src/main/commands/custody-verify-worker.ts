/**
 * One segment of `cyborg custody verify --workers N` (src/main/commands/custody-verify.ts): opens the
 * database on its own connection, walks its seq range of the chain and posts the result. A worker
 * thread, so that decoding rows and hashing them run on another core than the other segments.
 */
import { createPublicKey } from 'node:crypto'
import { parentPort, workerData } from 'node:worker_threads'
import type { Config } from '../../config/config.js'
import { verifyStoredCustody, type SeqRange } from '../../db/reads/custody-walk.js'
import { openConfiguredDatabase } from '../database.js'

/** What the parent gives a worker. */
export interface SegmentJob {
  config: Config
  range: SeqRange
  /** The first segment starts the chain: it reads the checkpoint and checks the start. */
  segment: boolean
  pageSize: number
  /** PEM of the key checkpoints must be signed with, when pinned. */
  publicKeyPem?: string | undefined
}

const job = workerData as SegmentJob
const handle = await openConfiguredDatabase(job.config, { readOnly: true })
try {
  const result = await verifyStoredCustody(handle.db, {
    pageSize: job.pageSize,
    range: job.range,
    segment: job.segment,
    publicKey: job.publicKeyPem === undefined ? undefined : createPublicKey(job.publicKeyPem),
  })
  parentPort!.postMessage(result)
} finally {
  await handle.close()
}
