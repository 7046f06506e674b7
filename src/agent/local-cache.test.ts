import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  CACHE_FILES,
  createFileAgentCache,
  decodeCacheFile,
  encodeCacheFile,
} from './local-cache.js'
import { buildSnapshot } from './snapshot.js'
import { createFakeDriver } from '../drivers/fake/fake.js'
import { createFixtureHostProbe } from '../drivers/host-probe/fixture-host-probe.js'
import { noopLogger } from '../domain/logger.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'

const devicesOf = (hostname: string) =>
  createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname }).discover()
const unchanged = { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }

function warnings() {
  const lines: { obj: unknown; msg: string }[] = []
  const log = {
    ...noopLogger,
    warn: (obj: unknown, msg?: unknown) => void lines.push({ obj, msg: String(msg) }),
    child: () => log,
  }
  return { log, lines }
}

void describe('file agent cache', () => {
  let root: string
  let a: InventorySnapshot
  let b: InventorySnapshot
  let n = 0
  const newDir = () => path.join(root, `agent-${++n}`)

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'cyborg-cache-'))
    a = buildSnapshot('h1', await devicesOf('h1'))
    b = buildSnapshot('h1', await devicesOf('h1-other'))
  })
  after(() => rm(root, { recursive: true, force: true }))

  void it('keeps snapshot, driver states, driver settings, remote accelerators and outbox across instances; acknowledging empties the outbox', async () => {
    const dir = newDir()
    const cache = createFileAgentCache(dir, { log: noopLogger })
    assert.deepEqual(await cache.pending(), [])
    await cache.saveSnapshot(a)
    await cache.saveDriverStates([
      { driver: 'fake', ok: true, deviceCount: 1, durationMs: 0.5, at: '2026-01-01T00:00:00.000Z' },
    ])
    assert.equal(await cache.driverSettings(), undefined)
    const settings = {
      fake: { enabled: false, options: {} },
      pci: { enabled: true, options: { device_spec: '[]' } },
    }
    await cache.saveDriverSettings(settings)
    assert.equal(await cache.remoteAccelerators(), undefined)
    const remote = [{ name: 'IPSec Card', uuid: '8e45a2ea-5364-4b0d-a252-bf8becaa606e' }]
    await cache.saveRemoteAccelerators(remote)
    const reopened = createFileAgentCache(dir, { log: noopLogger })
    assert.deepEqual(await reopened.driverSettings(), settings)
    assert.deepEqual(await reopened.remoteAccelerators(), remote)
    assert.deepEqual(await reopened.pending(), [a])
    assert.deepEqual(await reopened.lastSnapshot(), a)
    assert.equal((await reopened.driverStates())[0]?.driver, 'fake')
    await reopened.acknowledge(a, unchanged)
    assert.deepEqual(await createFileAgentCache(dir, { log: noopLogger }).pending(), [])
    assert.equal(
      await createFileAgentCache(dir, { log: noopLogger }).lastAcknowledgedHash(),
      a.hash,
    )
    assert.deepEqual(
      (await readdir(dir)).sort(),
      Object.values(CACHE_FILES).sort(),
      'no temp files left',
    )
  })

  void it('a newer snapshot supersedes a pending one; an acknowledged hash is not queued again', async () => {
    const cache = createFileAgentCache(newDir(), { log: noopLogger })
    await cache.saveSnapshot(a)
    await cache.saveSnapshot(b)
    assert.deepEqual(
      (await cache.pending()).map((s) => s.hash),
      [b.hash],
    )
    await cache.acknowledge(b, unchanged)
    await cache.saveSnapshot(b)
    assert.deepEqual(await cache.pending(), [])
    await cache.acknowledge(a, unchanged) // a late, stale acknowledgement does not resurrect anything
    assert.deepEqual(await cache.pending(), [])
  })

  void it('a crash between the temp write and the rename leaves the old file intact', async () => {
    const dir = newDir()
    await createFileAgentCache(dir, { log: noopLogger }).saveSnapshot(a)
    const before = await readFile(path.join(dir, CACHE_FILES.outbox), 'utf8')
    const crashing = createFileAgentCache(dir, {
      log: noopLogger,
      fs: {
        rename: async () => {
          throw Object.assign(new Error('power cut'), { code: 'EIO' })
        },
      },
    })
    await assert.rejects(crashing.saveSnapshot(b), /power cut/)
    assert.equal(await readFile(path.join(dir, CACHE_FILES.outbox), 'utf8'), before)
    // A temp file that a real crash would leave behind is cleaned up on the next open.
    await writeFile(
      path.join(dir, `.${CACHE_FILES.outbox}.999.deadbeef.tmp`),
      'cyborg-agent-cache 1 sha256=',
    )
    const reopened = createFileAgentCache(dir, { log: noopLogger })
    assert.deepEqual(await reopened.pending(), [a])
    assert.ok(!(await readdir(dir)).some((f) => f.endsWith('.tmp')))
  })

  void it('moves a torn or corrupt file aside with a warning and carries on', async () => {
    const dir = newDir()
    await createFileAgentCache(dir, { log: noopLogger }).saveSnapshot(a)
    const outbox = path.join(dir, CACHE_FILES.outbox)
    const good = await readFile(outbox, 'utf8')
    await writeFile(outbox, good.slice(0, good.length - 40)) // torn write
    await writeFile(path.join(dir, CACHE_FILES.drivers), '{"not": "a cache file"') // garbage
    const wrongShape = { savedAt: 'x', drivers: { fake: { enabled: 'yes', options: {} } } }
    await writeFile(path.join(dir, CACHE_FILES.driverSettings), encodeCacheFile(wrongShape)) // checksum fine, shape not
    const { log, lines } = warnings()
    const cache = createFileAgentCache(dir, { log })
    assert.deepEqual(await cache.pending(), [])
    assert.deepEqual(await cache.lastSnapshot(), a, 'the intact file is still read')
    assert.equal(await cache.driverSettings(), undefined)
    assert.equal(lines.length, 3)
    assert.ok(lines.every((l) => l.msg.startsWith('agent cache file is corrupt')))
    const files = await readdir(dir)
    assert.equal(files.filter((f) => f.startsWith(`${CACHE_FILES.outbox}.corrupt-`)).length, 1)
    assert.equal(files.filter((f) => f.startsWith(`${CACHE_FILES.drivers}.corrupt-`)).length, 1)
    assert.equal(
      files.filter((f) => f.startsWith(`${CACHE_FILES.driverSettings}.corrupt-`)).length,
      1,
    )
    await cache.saveSnapshot(b) // and keeps working
    assert.deepEqual(
      (await createFileAgentCache(dir, { log: noopLogger }).pending()).map((s) => s.hash),
      [b.hash],
    )
  })

  void it('detects a checksum mismatch even when the JSON parses', () => {
    const text = encodeCacheFile({ entries: [] })
    assert.deepEqual(decodeCacheFile(text), { entries: [] })
    assert.throws(() => decodeCacheFile(text.replace('[]', '[ ]')), /checksum/)
    assert.throws(() => decodeCacheFile('{"entries":[]}'), /header/)
  })
})
