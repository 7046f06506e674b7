/**
 * Device health from the report: a driver's `failed` fences the device (binds pass it over), its
 * `degraded` is still offered; both are stored with their reason.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { DiscoveredDevice, ReportedHealth } from '../domain/inventory/inventory.js'
import { noopLogger } from '../domain/logger.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { testDialects } from '../../test/support/db.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { createConductor } from './conductor.js'
import { listHealthTransitions } from '../db/health-transitions.js'

await test('a failed device is not bound; a degraded one is, and both say why', async () => {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  const conductor = createConductor(
    { db, log: noopLogger, clock: { now: () => new Date() } },
    { saveIntervalMs: 0, reapIntervalMs: 0 },
  )
  const report = (health: ReportedHealth) => {
    const [device] = sampleSnapshot('h1', 1, { attachType: 'TEST_PCI' }).devices
    const devices: DiscoveredDevice[] = [{ ...device!, health }]
    return conductor.reportInventory({
      host: 'h1',
      hash: inventoryHash(devices),
      devices,
      autoActivate: true,
    })
  }
  const health = () =>
    db.db.selectFrom('devices').select(['health', 'health_reason']).executeTakeFirst()
  try {
    await report({ state: 'failed', reason: '2 uncorrectable ECC errors' })
    assert.deepEqual(await health(), {
      health: 'failed',
      health_reason: '2 uncorrectable ECC errors',
    })
    await conductor.createDeviceProfile({
      name: 'dp',
      description: null,
      groups: [{ 'resources:PGPU': '1' }],
    })
    const ask = { deviceProfileName: 'dp', projectId: null, maxArqs: 8 }
    const bind = async (instance: string) => {
      const [arq] = await conductor.createArqs(ask)
      const bindings = { [arq!.uuid]: { hostname: 'h1', instanceUuid: instance } }
      return (await conductor.bindArqs({ bindings }))[0]!
    }
    const [deployable] = await db.db.selectFrom('deployables').select(['uuid', 'name']).execute()
    await assert.rejects(
      conductor.attachAccelerator({
        uuid: deployable!.uuid,
        target: { instanceUuid: '00000000-0000-4000-8000-0000000000a1' },
      }),
      {
        code: 'ACCELERATOR_FENCED',
        message:
          `accelerator ${deployable!.uuid} cannot be attached: ${deployable!.name} is fenced ` +
          `(health failed: 2 uncorrectable ECC errors); it is offered again once it reports healthy`,
      },
    )
    const refused = await bind('00000000-0000-4000-8000-000000000001')
    assert.equal(refused.state, 'BindFailed')
    assert.match(
      refused.reason ?? '',
      /^no fit on h1: h1_\S+ is fenced \(health failed: 2 uncorrectable ECC errors\); it is offered again once it reports healthy$/,
    )

    await report({ state: 'degraded', reason: 'PCIe link at x8 of x16' })
    assert.deepEqual(await health(), {
      health: 'degraded',
      health_reason: 'PCIe link at x8 of x16',
    })
    assert.equal((await bind('00000000-0000-4000-8000-000000000002')).state, 'Bound')
  } finally {
    await conductor.stop()
    await db.close()
  }
})

await test('damping: a failed device is offered again after health_recovery_reports healthy reports; each change is recorded and logged once', async () => {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  const lines: [string, string][] = []
  const log = {
    ...noopLogger,
    warn: (_: unknown, msg?: unknown) => void lines.push(['warn', String(msg)]),
    info: (_: unknown, msg?: unknown) => void lines.push(['info', String(msg)]),
    child: () => log,
  } as unknown as typeof noopLogger
  const conductor = createConductor(
    { db, log, clock: { now: () => new Date() } },
    { saveIntervalMs: 0, reapIntervalMs: 0, healthRecoveryReports: 2 },
  )
  const [device] = sampleSnapshot('h1', 1, { attachType: 'TEST_PCI' }).devices
  const report = (health?: ReportedHealth) => {
    const devices: DiscoveredDevice[] = [{ ...device!, ...(health ? { health } : {}) }]
    const hash = inventoryHash(devices)
    return conductor.reportInventory({ host: 'h1', hash, devices, autoActivate: true })
  }
  const health = async () =>
    (await db.db.selectFrom('devices').select('health').executeTakeFirstOrThrow()).health
  const hash = async () =>
    (await db.db.selectFrom('services').select('report_hash').executeTakeFirstOrThrow()).report_hash
  try {
    await report()
    await report({ state: 'failed', reason: '2 uncorrectable ECC errors (volatile)' })
    assert.equal(await health(), 'failed')
    await report()
    assert.equal(await health(), 'failed', 'one healthy report is not enough')
    assert.equal(await hash(), null, 'while recovering, the hash is not kept')
    await report() // the same snapshot again: diffed, not skipped as unchanged
    assert.equal(await health(), 'ok')
    assert.notEqual(await hash(), null)
    const recorded = await listHealthTransitions(db.db)
    assert.deepEqual(
      recorded.map((t) => [t.from, t.to]),
      [
        ['ok', 'failed'],
        ['failed', 'ok'],
      ],
    )
    const healthLines = lines.filter(([, m]) => /^device /.test(m))
    assert.deepEqual(healthLines, [
      ['warn', 'device fenced (health failed): 2 uncorrectable ECC errors (volatile)'],
      ['info', 'device offered again (health ok)'],
    ])
  } finally {
    await conductor.stop()
    await db.close()
  }
})
