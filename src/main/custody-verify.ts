/**
 * `cyborg custody verify` (docs/custody.md): opens `[database] connection` and walks the custody
 * hash chain from its newest checkpoint (or seq 1), 10,000 records a query; prints the head or the
 * first broken record and why. Resolves false when the chain is broken.
 */
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Config } from '../config/config.js'
import { verifyStoredCustody } from '../db/custody.js'
import { openConfiguredDatabase } from './database.js'

export interface VerifyFlags {
  publicKey?: string | undefined
  pageSize: string
  format: string
}

export async function verifyCustodyLedger(config: Config, flags: VerifyFlags): Promise<boolean> {
  const publicKey =
    flags.publicKey === undefined ? undefined : createPublicKey(readFileSync(flags.publicKey))
  const handle = await openConfiguredDatabase(config)
  try {
    const started = performance.now()
    const result = await verifyStoredCustody(handle.db, {
      pageSize: Number(flags.pageSize) || 10_000,
      publicKey,
    })
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
  } finally {
    await handle.close()
  }
}
