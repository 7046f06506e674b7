/** Deployables, written: the image an FPGA deployable runs. Reads are src/db/reads/deployable-reads.ts. */
import type { Kysely } from 'kysely'
import type { Database } from './core/schema.js'

/** Records the image a deployable's FPGA now runs. */
export async function updateBitstream(
  db: Kysely<Database>,
  deployableId: number,
  imageId: string,
  now: string,
): Promise<void> {
  await db
    .updateTable('deployables')
    .set({ bitstream_id: imageId, updated_at: now })
    .where('id', '=', deployableId)
    .execute()
}
