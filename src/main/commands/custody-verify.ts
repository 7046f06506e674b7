/**
 * `cyborg custody verify` (docs/custody.md): opens `[database] connection` and walks the custody
 * hash chain from its newest checkpoint (or seq 1), 10,000 records a query; prints the head or the
 * first broken record and why. Resolves false when the chain is broken. A long chain is cut into
 * `--workers` seq ranges walked side by side in worker threads, each on its own connection, and
 * the results joined (src/domain/custody/custody-segments.ts): the same answer, on more cores.
 */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { Config } from '../../config/config.js'
import { joinCustodySegments } from '../../domain/custody/custody-segments.js'
import { InvalidInputError } from '../../domain/errors.js'
import type { CustodyVerifyResult } from '../../domain/custody/custody-verify.js'
import { getSealedSeqRange, verifyStoredCustody } from '../../db/reads/custody-walk.js'
import type { SegmentJob } from './custody-verify-worker.js'
import { openConfiguredDatabase, requireCurrentSchema } from '../database.js'

export interface VerifyFlags {
  publicKey?: string | undefined
  pageSize: string
  format: string
  /** Segments walked side by side; `auto`: 2 from 100,000 sealed records, else 1. */
  workers?: string | undefined
}

/** `.js` when running from dist/ (compiled), `.ts` when tsx runs the sources (tests, development). */
const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js'

/** From how many sealed records `--workers auto` walks two segments. */
const PARALLEL_FROM = 100_000

function runSegment(job: SegmentJob): Promise<CustodyVerifyResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(`./custody-verify-worker${EXT}`, import.meta.url), {
      workerData: job,
      resourceLimits: { maxYoungGenerationSizeMb: 64 },
    })
    worker.once('message', (result: CustodyVerifyResult) => resolve(result))
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`custody verify worker exited with ${code}`))
    })
  })
}

/** A PEM public key file is a few hundred bytes; more is not one. */
const KEY_FILE_MAX = 64 * 1024

/**
 * `--public-key`'s PEM and key; a file that cannot be read, or holds no Ed25519 public key, is an
 * InvalidInputError naming the file and what is expected (never OpenSSL's decoder error).
 */
function readPublicKey(file: string): { pem: string; key: KeyObject } {
  const expected =
    'expected the Ed25519 public key the custody checkpoints are signed with, in PEM (-----BEGIN PUBLIC KEY-----)'
  let pem: string
  try {
    const stat = statSync(file)
    if (!stat.isFile() || stat.size > KEY_FILE_MAX)
      throw new InvalidInputError(`--public-key ${file} is not a PEM public key file; ${expected}`)
    pem = readFileSync(file, 'utf8')
  } catch (err) {
    if (err instanceof InvalidInputError) throw err
    throw new InvalidInputError(
      `cannot read --public-key ${file}: ${(err as { code?: string }).code ?? String(err)}`,
    )
  }
  let key: KeyObject
  try {
    key = createPublicKey(pem)
  } catch {
    throw new InvalidInputError(
      `the file ${file} is not a PEM public key (--public-key); ${expected}`,
    )
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new InvalidInputError(
      `the file ${file} holds an ${key.asymmetricKeyType ?? 'unknown'} key (--public-key); ${expected}`,
    )
  return { pem, key }
}

async function walk(config: Config, flags: VerifyFlags, pageSize: number) {
  const pinned = flags.publicKey === undefined ? undefined : readPublicKey(flags.publicKey)
  const publicKeyPem = pinned?.pem
  const publicKey = pinned?.key
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
