import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { createConductorClient, serveConductor, type ConductorRpc } from './conductor-rpc.js'
import { createRpcClient } from './rpc.js'
import { NotFoundError } from '../domain/errors.js'

void describe('typed RPC', () => {
  void it('exposes only contract methods, never lifecycle or Object.prototype members', async () => {
    const bus = createInProcessBus()
    try {
      let stopped = false
      const impl = {
        heartbeat: async (req: unknown) => void req,
        stop: async () => void (stopped = true),
      } as unknown as ConductorRpc
      // serveConductor checks that every contract method exists.
      assert.throws(() => serveConductor(bus, impl), TypeError)
      const full = Object.fromEntries(
        [
          'reportInventory',
          'heartbeat',
          'createDeviceProfile',
          'deleteDeviceProfiles',
          'createAttribute',
          'deleteAttribute',
          'setDeviceStatus',
          'markDeviceReady',
          'cleanDevice',
          'programDeployable',
          'configureDevice',
          'createArqs',
          'bindArqs',
          'unbindArqs',
          'deleteArqs',
          'attachAccelerator',
          'detachAccelerator',
          'setAcceleratorSpecs',
          'registerRemoteAccelerator',
          'listAgentDrivers',
          'installDriver',
          'uninstallDriver',
          'updateDriver',
          'discoverHosts',
          'createWebhook',
          'updateWebhook',
          'deleteWebhook',
          'placementExplain',
        ].map((m) => [m, async () => m]),
      )
      await serveConductor(bus, {
        ...full,
        stop: async () => void (stopped = true),
      } as unknown as ConductorRpc)
      const client = createConductorClient(bus, { timeoutMs: 1000 })
      assert.equal(await client.heartbeat({ host: 'h', binary: 'b', version: '1' }), 'heartbeat')
      const raw = createRpcClient<Record<string, (p: unknown) => Promise<unknown>>>(
        bus,
        'cyborg.conductor',
        '1.0',
        { timeoutMs: 1000 },
      )
      for (const method of ['stop', 'constructor', 'toString', '__proto__']) {
        await assert.rejects(
          raw[method]!({}),
          (err) => err instanceof NotFoundError && err.code === 'RPC_NO_METHOD',
        )
      }
      assert.equal(stopped, false)
      const v2 = createRpcClient<Record<string, (p: unknown) => Promise<unknown>>>(
        bus,
        'cyborg.conductor',
        '2.0',
        { timeoutMs: 1000 },
      )
      await assert.rejects(v2.heartbeat!({}), {
        name: 'InvalidInputError',
        code: 'RPC_VERSION_MISMATCH',
      })
    } finally {
      await bus.close()
    }
  })
})
