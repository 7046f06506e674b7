import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getReportHash, updateHeartbeat, updateReportHash } from './service-rows.js'
import { listServices } from './reads/service-reads.js'
import { testDialects } from '../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-01T00:00:10.000000+00:00'

for (const dialect of await testDialects()) {
  await test(
    `services: heartbeat upsert and report hash on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await updateHeartbeat(db, { host: 'c1', binary: 'cyborg-agent', version: '1.0' }, T0)
        await updateHeartbeat(db, { host: 'c1', binary: 'cyborg-agent', version: '1.0' }, T0) // same values again
        await updateHeartbeat(db, { host: 'c1', binary: 'cyborg-agent', version: '1.1' }, T1)
        await updateHeartbeat(db, { host: 'ctl', binary: 'cyborg-conductor', version: '1.0' }, T0)
        const services = await listServices(db)
        assert.deepEqual(
          services.map(({ host, binary, version, lastSeen, createdAt, reportHash }) => ({
            host,
            binary,
            version,
            lastSeen,
            createdAt,
            reportHash,
          })),
          [
            {
              host: 'c1',
              binary: 'cyborg-agent',
              version: '1.1',
              lastSeen: T1,
              createdAt: T0,
              reportHash: null,
            },
            {
              host: 'ctl',
              binary: 'cyborg-conductor',
              version: '1.0',
              lastSeen: T0,
              createdAt: T0,
              reportHash: null,
            },
          ],
        )
        assert.equal(await getReportHash(db, 'c1'), null)
        await updateReportHash(db, 'c1', 'abc', T1)
        assert.equal(await getReportHash(db, 'c1'), 'abc')
        await updateHeartbeat(db, { host: 'c1', binary: 'cyborg-agent', version: '1.1' }, T1)
        assert.equal(await getReportHash(db, 'c1'), 'abc', 'a heartbeat keeps the hash')
        // A report from a host that never heartbeated creates its agent row.
        await updateReportHash(db, 'c2', 'def', T1)
        assert.equal(await getReportHash(db, 'c2'), 'def')
        assert.equal(await getReportHash(db, 'ctl'), null)
        assert.equal((await listServices(db)).length, 3)
      } finally {
        await handle.close()
      }
    },
  )
}
