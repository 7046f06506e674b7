/**
 * The database rules on a 3-node MariaDB Galera cluster (issue 30), with writers on DIFFERENT nodes:
 * row locks are local to a node, so a conflicting write made through another node fails at COMMIT
 * (certification, reported as deadlock 1213) and must be retried; reads must wait for the cluster
 * (wsrep_sync_wait); a multi-host URL moves on from a host that does not answer. docs/deploy.md.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import {
  sql,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { claimInstanceLocks } from '../../src/db/arq-instances.js'
import { claimAttachHandle } from '../../src/db/attach-handles.js'
import {
  openDatabase,
  parseConnectionUrl,
  type DatabaseHandle,
} from '../../src/db/core/connection.js'
import { createGroupCommitter } from '../../src/db/core/group-commit.js'
import { noopLogger } from '../../src/domain/logger.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { STORM_HOST as HOST, stormDevices } from '../support/storm-inventory.js'
import { galeraSkip, sqlPort, startGalera, type GaleraCluster } from './galera-rig.js'

const clock = { now: () => new Date() }
const skip = galeraSkip()

void describe('Galera: two writers on two nodes', { skip, timeout: 600_000 }, () => {
  let cluster: GaleraCluster
  let database: string
  /** The same database through node 1 and node 2. */
  let n1: DatabaseHandle
  let n2: DatabaseHandle
  let conductors: Conductor[] = []
  const fileStarted = performance.now()

  before(async () => {
    cluster = await startGalera()
    database = await cluster.createDatabase()
    ;[n1, n2] = await Promise.all([cluster.open(1, database), cluster.open(2, database)])
    conductors = [n1, n2].map((h) =>
      createConductor({ db: h, log: noopLogger, clock }, { saveIntervalMs: 1, reapIntervalMs: 0 }),
    )
    const list = stormDevices(4, 4) // 4 deployables of 4 TEST_PCI handles each
    await conductors[0]!.reportInventory({
      host: HOST,
      hash: inventoryHash(list),
      devices: list,
      autoActivate: true,
    })
    await conductors[0]!.createDeviceProfile({
      name: 'one',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
    })
  })
  /** Certification failures and brute-force aborts on nodes 1 and 2 so far. */
  const conflicts = async () => {
    let sum = 0
    for (const h of [n1, n2]) {
      const { rows } = await sql<{ Value: string }>`SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')`.execute(h.db)
      for (const r of rows) sum += Number(r.Value)
    }
    return sum
  }
  after(async () => {
    for (const c of conductors) await c.stop()
    await n1?.close()
    await n2?.close()
    await cluster?.down()
    const seconds = ((performance.now() - fileStarted) / 1000).toFixed(1)
    console.log(`galera: cluster up in ${cluster?.startSeconds.toFixed(1)} s, file in ${seconds} s`)
  })

  void it('every session on a Galera node waits for the cluster before reading', async () => {
    for (const h of [n1, n2]) {
      const { rows } = await sql<{ w: number }>`SELECT @@session.wsrep_sync_wait AS w`.execute(h.db)
      assert.equal(Number(rows[0]!.w) & 1, 1)
    }
  })

  void it('handle claims through two nodes at once: no handle is held twice', async () => {
    const committers = [n1, n2].map((h) => createGroupCommitter(h, { intervalMs: 1, maxBatch: 8 }))
    const deployables = (
      await n1.db.selectFrom('deployables').select('id').orderBy('id').execute()
    ).map((r) => r.id)
    const handles = await n1.db.selectFrom('attach_handles').select('id').execute()
    const conflictsBefore = await conflicts()
    try {
      for (let round = 0; round < 15; round++) {
        // Six claimers per deployable (three through each node) race for its four handles.
        const claims = deployables.flatMap((dep) =>
          Array.from({ length: 6 }, (_, i) =>
            committers[i % 2]!.run((trx) => claimAttachHandle(trx, dep)),
          ),
        )
        const got = (await Promise.all(claims)).flatMap((h) => (h ? [h.id] : []))
        assert.equal(new Set(got).size, got.length, `round ${round}: a handle was claimed twice`)
        assert.equal(got.length, handles.length, `round ${round}: every handle is claimed once`)
        const inUse = await n2.db
          .selectFrom('attach_handles')
          .select('id')
          .where('in_use', '=', 1)
          .execute()
        assert.equal(inUse.length, got.length)
        await n1.db.updateTable('attach_handles').set({ in_use: 0 }).execute()
      }
      // The race is real: some claims lost to a write committed through the other node.
      assert.ok((await conflicts()) > conflictsBefore, 'no certification conflict happened')
    } finally {
      for (const c of committers) await c.close()
    }
  })

  void it('concurrent binds of one instance through conductors on two nodes: one wins', async () => {
    const conflictsBefore = await conflicts()
    for (let round = 0; round < 3; round++) {
      const instance = `5707a000-0000-4000-8000-00000000000${round}`
      const arqs = await conductors[0]!.createArqs({
        deviceProfileName: 'one',
        projectId: null,
        maxArqs: 4,
      })
      const arqs2 = await conductors[0]!.createArqs({
        deviceProfileName: 'one',
        projectId: null,
        maxArqs: 4,
      })
      const all = [...arqs, ...arqs2]
      const settled = await Promise.allSettled(
        all.map((arq, i) =>
          conductors[i % 2]!.bindArqs({
            bindings: { [arq.uuid]: { hostname: HOST, instanceUuid: instance } },
          }),
        ),
      )
      const won = settled.filter((s) => s.status === 'fulfilled')
      assert.equal(won.length, 1, `round ${round}: exactly one bind of the instance goes through`)
      for (const s of settled)
        if (s.status === 'rejected')
          assert.equal(
            (s.reason as { code?: string }).code,
            'INSTANCE_ALREADY_BOUND',
            String(s.reason),
          )
      const named = await n2.db
        .selectFrom('accelerator_requests')
        .select('uuid')
        .where('instance_uuid', '=', instance)
        .execute()
      assert.equal(named.length, 1, 'one request names the instance')
      await conductors[1]!.deleteArqs({ uuids: all.map((a) => a.uuid) })
    }
    assert.ok((await conflicts()) > conflictsBefore, 'no certification conflict happened')
  })

  void it('bind locks of one instance taken at the same instant through two nodes conflict', async () => {
    const instance = randomUUID()
    const now = clock.now().toISOString()
    await claimInstanceLocks(n1.db, 'mysql', [instance], now)
    for (let round = 0; round < 3; round++) {
      // Each holds the lock row on its own node; the second COMMIT must fail certification.
      const [t1, t2] = await Promise.all([n1, n2].map((h) => h.db.startTransaction().execute()))
      await claimInstanceLocks(t1!, 'mysql', [instance], now)
      await claimInstanceLocks(t2!, 'mysql', [instance], now)
      await t1!.commit().execute()
      await assert.rejects(t2!.commit().execute(), (err: { errno?: number }) => err.errno === 1213)
      await t2!
        .rollback()
        .execute()
        .catch(() => {})
    }
  })

  void it('a batch whose COMMIT fails certification reruns its writes, each landing once', async () => {
    await sql`CREATE TABLE gc_counter (id VARCHAR(16) PRIMARY KEY, n INT NOT NULL)`.execute(n1.db)
    await sql`CREATE TABLE gc_log (id VARCHAR(36) PRIMARY KEY, tag VARCHAR(16) NOT NULL)`.execute(
      n1.db,
    )
    await sql`INSERT INTO gc_counter VALUES ('hot', 0)`.execute(n1.db)
    const commitErrors: unknown[] = []
    const gated = await openDatabase(cluster.url(1, database), {
      poolSize: 4,
      log: (event) => {
        if (event.level === 'error' && /^commit/i.test(event.query.sql))
          commitErrors.push(event.error)
      },
    })
    // Once, after the batch's marker is written (its last statement), a conflicting write commits
    // through node 2 and reaches node 1 before the batch's COMMIT.
    let fired = false
    const plugin = conflictBeforeCommit(async () => {
      if (fired) return
      fired = true
      await sql`UPDATE gc_counter SET n = n + 100 WHERE id = 'hot'`.execute(n2.db)
      await sql`SELECT n FROM gc_counter WHERE id = 'hot'`.execute(gated.db) // waits for node 1 to apply it
    })
    const committer = createGroupCommitter(
      { ...gated, db: gated.db.withPlugin(plugin) },
      { intervalMs: 1, maxBatch: 8 },
    )
    try {
      const logged = (tag: string) => async (trx: typeof n1.db) => {
        const id = randomUUID() // made inside: a second run would add a second row
        await sql`INSERT INTO gc_log (id, tag) VALUES (${id}, ${tag})`.execute(trx)
        return id
      }
      const results = await Promise.all([
        committer.run((trx) => sql`UPDATE gc_counter SET n = n + 1 WHERE id = 'hot'`.execute(trx)),
        committer.run(logged('a')),
        committer.run(logged('b')),
      ])
      assert.ok(fired, 'the conflicting write ran')
      assert.equal(commitErrors.length, 1, 'the batch COMMIT failed once')
      assert.equal((commitErrors[0] as { errno?: number }).errno, 1213)
      const counter = await sql<{ n: number }>`SELECT n FROM gc_counter`.execute(n2.db)
      assert.equal(
        Number(counter.rows[0]!.n),
        101,
        'the increment landed once, after the conflicting one',
      )
      const rows = await sql<{
        id: string
        tag: string
      }>`SELECT id, tag FROM gc_log ORDER BY tag`.execute(n2.db)
      assert.deepEqual(rows.rows, [
        { id: results[1], tag: 'a' },
        { id: results[2], tag: 'b' },
      ])
    } finally {
      await committer.close()
      await gated.close()
    }
  })

  void it('a read through another node sees the write a node acknowledged (wsrep_sync_wait)', async () => {
    await sql`CREATE TABLE ryw (id INT PRIMARY KEY, v VARCHAR(8) NOT NULL)`.execute(n1.db)
    for (let round = 1; round <= 5; round++) {
      // A big transaction takes node 2 a while to apply: without waiting, a read there sees less.
      await sql`INSERT INTO ryw SELECT seq, 'x' FROM ${sql.raw(`seq_${(round - 1) * 20000 + 1}_to_${round * 20000}`)}`.execute(
        n1.db,
      )
      const { rows } = await sql<{ c: number }>`SELECT COUNT(*) AS c FROM ryw`.execute(n2.db)
      assert.equal(Number(rows[0]!.c), round * 20000, `round ${round}`)
    }
  })

  void it('a URL with several hosts uses the first that answers', async () => {
    const parsed = parseConnectionUrl(
      `mysql://root@127.0.0.1:3409,127.0.0.1:${sqlPort(2)},[::1]/${database}`,
    )
    assert.deepEqual(parsed.hosts, [
      { host: '127.0.0.1', port: 3409 },
      { host: '127.0.0.1', port: sqlPort(2) },
      { host: '::1', port: 3306 },
    ])
    assert.throws(() => parseConnectionUrl('postgresql://u@a:1,b:2/db'), /invalid database URL/)
    // Nothing listens on 3409: every connection goes to node 2, the next host.
    const multi = await openDatabase(
      `mysql://root@127.0.0.1:3409,127.0.0.1:${sqlPort(2)},127.0.0.1:${sqlPort(3)}/${database}`,
      { poolSize: 3 },
    )
    try {
      const ports = await Promise.all(
        Array.from({ length: 6 }, async () =>
          Number((await sql<{ p: number }>`SELECT @@port AS p`.execute(multi.db)).rows[0]!.p),
        ),
      )
      assert.deepEqual(new Set(ports), new Set([sqlPort(2)]))
      const conductor = createConductor(
        { db: multi, log: noopLogger, clock },
        { saveIntervalMs: 1, reapIntervalMs: 0 },
      )
      try {
        const arqs = await conductor.createArqs({
          deviceProfileName: 'one',
          projectId: null,
          maxArqs: 1,
        })
        assert.equal(arqs.length, 1)
        await conductors[0]!.deleteArqs({ uuids: arqs.map((a) => a.uuid) })
      } finally {
        await conductor.stop()
      }
    } finally {
      await multi.close()
    }
  })
})

/**
 * A plugin that, after the result of the first INSERT into `commit_markers` (a transaction's last
 * statement before COMMIT), runs `between` before handing the result on.
 */
function conflictBeforeCommit(between: () => Promise<void>): KyselyPlugin {
  const markerInserts = new WeakSet<QueryId>()
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      const node = args.node
      if (node.kind === 'InsertQueryNode' && node.into?.table.identifier.name === 'commit_markers')
        markerInserts.add(args.queryId)
      return node
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (markerInserts.has(args.queryId)) await between()
      return args.result
    },
  }
}
