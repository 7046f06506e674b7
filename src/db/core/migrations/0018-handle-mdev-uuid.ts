/**
 * `attach_handles.mdev_uuid` (issue 31; docs/nova.md, "MDEV attach handles"): the uuid of the
 * mdev of a vGPU unit's current (or last) allocation, minted when a bind or v1 attach claims an
 * MDEV handle (src/db/attach-handles.ts `claimAttachHandle`). It is the ARQ's
 * `attach_handle_uuid`, the uuid Nova's libvirt driver creates the mdev with, and the uuid the
 * release removes and the clean re-creates (docs/cleaning.md). Null means the handle's own uuid:
 * units claimed before this migration, and those imported from OpenStack Cyborg, whose mdev was
 * created with the attach handle's uuid.
 *
 * Numbered 0018 (0017 is taken on another branch). Undoing it drops the column: a unit held
 * meanwhile would then be released and cleaned under its handle's uuid, not its mdev's, so the
 * downgrade is guarded (src/db/core/migration-guards.ts).
 */
import type { Kysely } from 'kysely'

export const handleMdevUuidMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('attach_handles').addColumn('mdev_uuid', 'varchar(36)').execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('attach_handles').dropColumn('mdev_uuid').execute()
  },
}
