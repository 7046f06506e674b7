/**
 * Device, agent and driver events through an in-process conductor with a recording sink, on every
 * database: a report's devices `added`, marked ready (`ready`, then `active` or `error`), a status
 * change (`disabled`, `enabled`; none when it stays), a probe's failure (`health_changed`),
 * a vanished device (`removed`), a silent agent fenced by the lease sweep (`agent.lease_lost` and
 * each device's `health_changed`) and its next full report (`agent.lease_regained`), a driver
 * installed through the driver administration (`driver.installed`).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { sampleDevice } from '../../../test/support/sample-inventory.js'
import { listDevicesByHost } from '../../db/reads/device-reads.js'
import { createGroupCommitter } from '../../db/core/group-commit.js'
import type { DiscoveredDevice } from '../../domain/inventory/inventory.js'
import { noopLogger } from '../../domain/logger.js'
import { inventoryHash } from '../../rpc/inventory-hash.js'
import type { DriverAdminState } from '../../rpc/agent-rpc.js'
import { createConductor } from '../conductor.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'
import { sweepLeases } from '../lease-sweep.js'

const AGENT = 'cyborg-agent'

/** A sink that keeps what it gets. */
const recording = () => {
  const events: OutboxEvent[] = []
  const sink: EventSink = {
    name: 'recording',
    deliver: async (batch) => void events.push(...batch),
  }
  return { sink, events }
}

const data = (e: OutboxEvent | undefined) =>
  (e?.payload['cyborg_object.data'] ?? {}) as Record<string, unknown>

for (const dialect of await testDialects()) {
  await test(
    `device, agent and driver events on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const db = await dialect.create()
      let now = new Date('2026-11-25T06:00:00Z')
      const clock = { now: () => now }
      const { sink, events } = recording()
      let installFails = false
      const driverState = (driver: string, enabled: boolean): DriverAdminState => ({
        driver,
        enabled,
        options: { device_spec: '' },
        overrides: {},
        report: {
          ok: true,
          result: { changed: false, added: 0, updated: 0, removed: 0, pending: 0 },
        },
      })
      const agentFor = () => ({
        install: async () => {
          if (installFails) throw new Error('firmware too old')
          return { driver: 'nvidia-gpu' }
        },
        setDriverEnabled: async (req: { driver: string; enabled: boolean }) =>
          driverState(req.driver, req.enabled),
      })
      const conductor = createConductor(
        { db, log: noopLogger, clock, agentFor: agentFor as never, eventSinks: [sink] },
        { saveIntervalMs: 0, reapIntervalMs: 0, heartbeats: false },
      )
      const report = (devices: DiscoveredDevice[]) =>
        conductor.reportInventory({
          host: 'h1',
          hash: inventoryHash(devices),
          devices,
          autoActivate: false,
        })
      const since = async (mark: number) => {
        await conductor.drainEvents()
        return events.slice(mark).map((e) => [e.eventType, e.resourceUuid, e.priority])
      }
      try {
        await conductor.heartbeat({ host: 'h1', binary: AGENT, version: '1' })
        const devices = [sampleDevice('h1', 0), sampleDevice('h1', 1)]
        await report(devices)
        const [d0, d1] = await listDevicesByHost(db.db, 'h1')
        assert.deepEqual(await since(0), [
          ['accelerator.device.added', d0!.uuid, 'INFO'],
          ['accelerator.device.added', d1!.uuid, 'INFO'],
        ])
        assert.deepEqual(data(events[0]), {
          uuid: d0!.uuid,
          hostname: 'h1',
          type: 'GPU',
          vendor: '10de',
          model: 'A100',
          std_board_info: '{"class":"0302"}',
          vendor_board_info: null,
          status: 'enabled',
          lifecycle: 'inactive',
          lifecycle_reason: null,
          health: 'ok',
          health_reason: null,
        })
        assert.equal(events[0]!.payload['cyborg_object.name'], 'DevicePayload')
        assert.equal(events[0]!.payload['cyborg_object.version'], '1.0')
        assert.equal(events[0]!.payload['cyborg_object.namespace'], 'cyborg')

        let mark = events.length
        await conductor.markDeviceReady({ uuid: d0!.uuid })
        installFails = true
        await conductor.markDeviceReady({ uuid: d1!.uuid })
        assert.deepEqual(await since(mark), [
          ['accelerator.device.ready', d0!.uuid, 'INFO'],
          ['accelerator.device.active', d0!.uuid, 'INFO'],
          ['accelerator.device.ready', d1!.uuid, 'INFO'],
          ['accelerator.device.error', d1!.uuid, 'ERROR'],
        ])
        assert.equal(data(events.at(-1)).lifecycle_reason, 'firmware too old')

        mark = events.length
        await conductor.setDeviceStatus({ uuid: d0!.uuid, status: 'maintaining' })
        await conductor.setDeviceStatus({ uuid: d0!.uuid, status: 'maintaining' })
        await conductor.setDeviceStatus({ uuid: d0!.uuid, status: 'enabled' })
        assert.deepEqual(await since(mark), [
          ['accelerator.device.disabled', d0!.uuid, 'INFO'],
          ['accelerator.device.enabled', d0!.uuid, 'INFO'],
        ])

        mark = events.length
        const failing = { ...devices[1]!, health: { state: 'failed' as const, reason: 'ECC' } }
        await report([devices[0]!, failing])
        await report([devices[0]!])
        assert.deepEqual(await since(mark), [
          ['accelerator.device.health_changed', d1!.uuid, 'ERROR'],
          ['accelerator.device.removed', d1!.uuid, 'INFO'],
        ])
        const changed = events[mark]!
        assert.equal(changed.payload['cyborg_object.name'], 'DeviceHealthPayload')
        assert.deepEqual(
          [data(changed).previous_health, data(changed).health, data(changed).health_reason],
          ['ok', 'failed', 'ECC'],
        )

        // The agent falls silent: the sweep fences its host; its next full report lifts the fence.
        mark = events.length
        now = new Date('2026-11-25T06:05:00Z')
        const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
        const sweep = { db, committer, log: noopLogger, clock, syncPlacement: async () => {} }
        assert.deepEqual(await sweepLeases(sweep, 60_000), ['h1'])
        await committer.close()
        await report([devices[0]!])
        const silent = `agent ${AGENT}@h1 silent since 2026-11-25T06:00:00.000000+00:00`
        assert.deepEqual(await since(mark), [
          ['accelerator.agent.lease_lost', 'h1', 'ERROR'],
          ['accelerator.device.health_changed', d0!.uuid, 'ERROR'],
          ['accelerator.agent.lease_regained', 'h1', 'INFO'],
          ['accelerator.device.health_changed', d0!.uuid, 'INFO'],
        ])
        assert.deepEqual(data(events[mark]), {
          hostname: 'h1',
          binary: AGENT,
          reason: silent,
          devices: [d0!.uuid],
        })
        assert.deepEqual(
          [data(events[mark + 1]).health, data(events[mark + 1]).health_reason],
          ['unknown', silent],
        )
        assert.deepEqual(data(events[mark + 2]), {
          hostname: 'h1',
          binary: AGENT,
          reason: null,
          devices: [d0!.uuid],
        })
        assert.equal(data(events[mark + 3]).previous_health, 'unknown')

        mark = events.length
        await conductor.installDriver({ driver: 'pci', hostname: 'h1' })
        assert.deepEqual(await since(mark), [['accelerator.driver.installed', 'h1:pci', 'INFO']])
        assert.deepEqual(data(events[mark]), {
          hostname: 'h1',
          driver: 'pci',
          enabled: true,
          options: { device_spec: '' },
        })
        const ids = events.map((e) => e.id)
        assert.deepEqual(
          ids,
          [...ids].sort((a, b) => a - b),
          'delivered in id order',
        )
        assert.equal(new Set(events.map((e) => e.uuid)).size, events.length, 'each once')
      } finally {
        await conductor.stop()
        await db.close()
      }
    },
  )
}
