import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createDeviceProfile } from '../device-profiles.js'
import { listDeviceProfiles } from '../reads/device-profile-reads.js'
import { createGroupCommitter } from './group-commit.js'
import { testDialects } from '../../../test/support/db.js'

const NOW = '2024-01-01T00:00:00.000000+00:00'
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const profile = (n: number) => ({ uuid: uuid(n), name: `p${n}`, description: null, groups: [] })

/** A promise and the function that settles it. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

// Lanes need a second connection: PostgreSQL and MariaDB only (the conductor gives SQLite one lane).
for (const dialect of (await testDialects()).filter((d) => d.name !== 'sqlite')) {
  const skip = dialect.skip

  await test(
    `group commit lanes: a lone write does not wait for another's COMMIT on ${dialect.name}`,
    { skip, timeout: 60_000 }, // without lanes the first test would wait forever
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 64, lanes: 2 })
      const held = gate()
      try {
        const slow = gc.run(async (trx) => {
          await createDeviceProfile(trx, profile(1), NOW)
          await held.opened
          return 'slow'
        })
        await new Promise((r) => setImmediate(r))
        // The first transaction is still open: the second write runs and commits beside it.
        const fast = await gc.run((trx) => createDeviceProfile(trx, profile(2), NOW))
        assert.equal(fast.name, 'p2')
        assert.deepEqual(
          (await listDeviceProfiles(handle.db)).map((p) => p.name),
          ['p2'],
        )
        held.open()
        assert.equal(await slow, 'slow')
        assert.equal(gc.stats().batches, 2)
      } finally {
        held.open()
        await gc.close()
        await handle.close()
      }
    },
  )

  await test(
    `group commit lanes: under load one batch at a time, so writes keep sharing commits on ${dialect.name}`,
    { skip, timeout: 60_000 },
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 64, lanes: 2 })
      const held = gate()
      try {
        // A batch of 8 (fewer than 4 would leave the second lane open), one of them held.
        const first = Array.from({ length: 8 }, (_, i) =>
          gc.run(async (trx) => {
            await createDeviceProfile(trx, profile(i), NOW)
            if (i === 0) await held.opened
          }),
        )
        await new Promise((r) => setTimeout(r, 50))
        assert.equal(gc.stats().batches, 1)
        let done = 0
        const next = Array.from({ length: 8 }, (_, i) =>
          gc.run((trx) => createDeviceProfile(trx, profile(100 + i), NOW)).then(() => done++),
        )
        await new Promise((r) => setTimeout(r, 50))
        assert.equal(done, 0, 'the next writes wait for the running batch')
        assert.equal(gc.stats().batches, 1)
        held.open()
        await Promise.all([...first, ...next])
        assert.equal(gc.stats().batches, 2, 'the 8 that waited share one transaction')
        assert.equal((await listDeviceProfiles(handle.db)).length, 16)
      } finally {
        held.open()
        await gc.close()
        await handle.close()
      }
    },
  )
}
