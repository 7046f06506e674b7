/**
 * `cyborg custody verify` (docs/custody.md): opens `[database] connection` and walks the custody
 * hash chain from its newest checkpoint (or seq 1), 10,000 records a query; prints the head or the
 * first broken record and why. Resolves false when the chain is broken. A long chain is cut into
 * `--workers` seq ranges walked side by side in worker threads, each on its own connection, and
 * the results joined (src/domain/custody-segments.ts): the same answer, on more cores.
 */
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { Config } from '../config/config.js'
import { joinCustodySegments } from '../domain/custody-segments.js'
import type { CustodyVerifyResult } from '../domain/custody.js'
import { getSealedSeqRange, verifyStoredCustody } from '../db/custody-walk.js'
import type { SegmentJob } from './custody-verify-worker.js'
import { openConfiguredDatabase, requireCurrentSchema } from './database.js'

export interface VerifyFlags {
  publicKey?: string | undefined
  pageSize: string
  format: string
  /** Segments walked side by side; `auto`: 2 from 100,000 sealed records, else 1. */
  workers?: string | undefined
}

/** From how many sealed records `--workers auto` walks two segments. */
const PARALLEL_FROM = 100_000

function runSegment(job: SegmentJob): Promise<CustodyVerifyResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./custody-verify-worker.ts', import.meta.url), {
      workerData: job,
    })
    worker.once('message', (result: CustodyVerifyResult) => resolve(result))
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`custody verify worker exited with ${code}`))
    })
  })
}

async function walk(config: Config, flags: VerifyFlags, pageSize: number) {
  const publicKeyPem =
    flags.publicKey === undefined ? undefined : readFileSync(flags.publicKey, 'utf8')
  const publicKey = publicKeyPem === undefined ? undefined : createPublicKey(publicKeyPem)
  const handle = await openConfiguredDatabase(config, { readOnly: true })
  try {
    await requireCurrentSchema(handle, 'custody verify')
    const span = await getSealedSeqRange(handle.db)
    const wanted =
      flags.workers === undefined || flags.workers === 'auto'
        ? (span?.count ?? 0) >= PARALLEL_FROM
          ? 2
          : 1
        : Math.max(1, Math.min(8, Number(flags.workers) || 1))
    if (span === undefined || wanted === 1 || span.last - span.first < wanted)
      return await verifyStoredCustody(handle.db, { pageSize, publicKey })
    // Cut points between the first and the last sealed seq: the first segment holds the first record.
    const step = Math.ceil((span.last - span.first + 1) / wanted)
    const jobs = Array.from({ length: wanted }, (_, i): SegmentJob => {
      const afterSeq = i === 0 ? 0 : span.first - 1 + i * step
      const throughSeq = i === wanted - 1 ? undefined : span.first - 1 + (i + 1) * step
      return { config, range: { afterSeq, throughSeq }, segment: i > 0, pageSize, publicKeyPem }
    })
    return joinCustodySegments(await Promise.all(jobs.map(runSegment)))
  } finally {
    await handle.close()
  }
}

export async function verifyCustodyLedger(config: Config, flags: VerifyFlags): Promise<boolean> {
  const started = performance.now()
  const result = await walk(config, flags, Number(flags.pageSize) || 10_000)
  const seconds = (performance.now() - started) / 1000
  if (flags.format === 'json') {
    process.stdout.write(`${JSON.stringify({ ...result, seconds })}\n`)
  } else if (result.ok) {
    const from = result.anchor
      ? `seq ${result.firstSeq} (after checkpoint seq ${result.anchor.seq}, pruned through seq ${result.anchor.throughSeq})`
      : 'seq 1'
    process.stdout.write(
      result.head
        ? `custody chain OK: ${result.records} records from ${from} to head seq ${result.head.seq} ${result.head.hash} (${seconds.toFixed(2)} s)\n`
        : 'custody chain OK: no sealed records\n',
    )
  } else {
    process.stdout.write(`custody chain BROKEN at ${result.broken!.message}\n`)
  }
  return result.ok
}
