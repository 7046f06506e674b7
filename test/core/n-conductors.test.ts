/**
 * Several conductors on one database (as `cyborg conductor` × N on one queue): the same report
 * delivered to two of them at once (at-least-once delivery, an agent's outbox replay), and
 * different hosts spread over both. Correctness comes from the database: every host ends with its
 * devices exactly once, and no caller gets an error for a duplicate.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { noopLogger } from '../../src/domain/logger.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'

const clock = { now: () => new Date('2026-11-22T07:00:00.000Z') }
const HOSTS = 8

const report = (host: string, count: number) => {
  const devices = Array.from({ length: count }, (_, n) => sampleDevice(host, n))
  return { host, hash: inventoryHash(devices), devices, autoActivate: false }
}

for (const dialect of await testDialects()) {
  void describe(`two conductors on one ${dialect.name} database`, { skip: dialect.skip }, () => {
    let db: TestDatabase
    let second: DatabaseHandle
    let conductors: Conductor[]

    before(async () => {
      db = await dialect.create()
      // An in-memory SQLite database exists once per connection: there, both share the handle.
      second = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 4 })
      conductors = [db, second].map((handle) =>
        createConductor(
          { db: handle, log: noopLogger, clock },
          { saveIntervalMs: 2, maxBatch: 16 },
        ),
      )
    })
    after(async () => {
      for (const c of conductors ?? []) await c.stop()
      if (second !== db) await second?.close()
      await db?.close()
    })

    const devicesPerHost = async () => {
      const rows = await db.db.selectFrom('devices').select(['hostname', 'cpid_info']).execute()
      const byHost = new Map<string, string[]>()
      for (const r of rows) byHost.set(r.hostname, [...(byHost.get(r.hostname) ?? []), r.cpid_info])
      return byHost
    }

    void it('a report delivered to both at once lands once, and neither caller fails', async () => {
      const hosts = Array.from({ length: HOSTS }, (_, i) => `nc-${dialect.name}-${i}`)
      const results = await Promise.all(
        hosts.flatMap((h) => conductors.map((c) => c.reportInventory(report(h, 3)))),
      )
      assert.equal(results.length, HOSTS * 2)
      // Per host: one of the two did the work (or both saw the same diff); together exactly 3 added.
      for (let i = 0; i < HOSTS; i++) {
        const pair = results.slice(i * 2, i * 2 + 2)
        assert.equal(pair[0]!.added + pair[1]!.added, 3, JSON.stringify(pair))
      }
      const byHost = await devicesPerHost()
      for (const h of hosts) {
        const keys = byHost.get(h) ?? []
        assert.equal(keys.length, 3, h)
        assert.equal(new Set(keys).size, 3, h)
      }
      const deployables = await db.db.selectFrom('deployables').select('name').execute()
      assert.equal(deployables.length, HOSTS * 3)
    })

    void it('a changed report delivered twice converges; the unchanged one after it costs nothing', async () => {
      const host = `nc-${dialect.name}-0`
      const smaller = report(host, 2)
      await Promise.all(conductors.map((c) => c.reportInventory(smaller)))
      assert.equal((await devicesPerHost()).get(host)?.length, 2)
      const again = await Promise.all(conductors.map((c) => c.reportInventory(smaller)))
      assert.deepEqual(
        again.map((r) => r.changed),
        [false, false],
      )
    })
  })
}
