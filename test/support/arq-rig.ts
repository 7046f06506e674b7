/**
 * The stack of the accelerator-request tests (test/core/arqs.test.ts, arq-reaper.test.ts): a core
 * on SQLite and the in-process bus, a real agent (fake driver: 16 TEST_PCI handles) on host node1,
 * the device profiles the tests ask for, and a recording HTTP endpoint standing in for Nova's API
 * (Nova's compute service cannot run here).
 */
import { after, before } from 'node:test'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { Arq } from '../../src/domain/arq.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createNovaClient } from '../../src/openstack/nova.js'
import { testDialects, type TestDatabase } from './db.js'

export const INSTANCE = (n: number) => `0b9c0d1e-0000-4000-8000-${String(n).padStart(12, '0')}`

/** One os-server-external-events request the Nova stand-in received. */
export interface NovaBatch {
  path: string
  version: string | undefined
  events: { name: string; server_uuid: string; tag: string; status: string }[]
}

export interface ArqRig {
  db: TestDatabase
  core: Core
  /** Every request Nova got, in order; tests empty it before the calls they check. */
  batches: NovaBatch[]
  /** The resource provider of node1's deployable, for Nova-style binds. */
  rpUuid: string
  /** Nova's compute endpoint (`…/v2.1`) on the recording server. */
  novaUrl: string
  /** Creates project p1's accelerator requests from the device profile `name`. */
  create: (name: string) => Promise<Arq[]>
}

/** The profiles of the tests: `huge` asks for more than any host has. */
const PROFILES = [
  ['two-fpgas', [{ 'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]],
  ['one-fpga', [{ 'resources:FPGA': '1' }]],
  ['not-fake', [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'forbidden' }]],
  ['huge', [{ 'resources:FPGA': '1000000' }]],
] as const

/**
 * Registers the `before` that starts the rig and the `after` that stops it, on the enclosing
 * describe. The returned rig is filled in by that `before`: read its fields in tests, not at
 * describe time (`batches` and `create` are there from the start).
 */
export function useArqRig(): ArqRig {
  const batches: NovaBatch[] = []
  let nova: Server | undefined
  const rig = {
    batches,
    create: (name: string) =>
      rig.core.conductorClient.createArqs({
        deviceProfileName: name,
        projectId: 'p1',
        maxArqs: 64,
      }),
  } as ArqRig

  before(async () => {
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (d: Buffer) => (body += d.toString()))
      req.on('end', () => {
        batches.push({
          path: req.url ?? '',
          version: req.headers['openstack-api-version'] as string | undefined,
          ...(JSON.parse(body) as { events: [] }),
        })
        res.writeHead(200, { 'content-type': 'application/json' }).end(body)
      })
    })
    nova = server
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    rig.novaUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2.1`
    rig.db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    rig.core = await startCore({
      db: rig.db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: 'node1',
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
      },
      nova: createNovaClient({ endpoint: rig.novaUrl, token: 'admin', timeoutMs: 5000 }),
    })
    await rig.core.agent!.discoverNow()
    rig.rpUuid = (
      await rig.db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow()
    ).rp_uuid!
    for (const [name, groups] of PROFILES) {
      await rig.core.conductorClient.createDeviceProfile({
        name,
        description: null,
        groups: groups.map((g) => ({ ...g })),
      })
    }
  })
  after(async () => {
    await rig.core?.stop()
    await rig.db?.close()
    nova?.close()
  })
  return rig
}
