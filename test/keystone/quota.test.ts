/**
 * Quota from Keystone unified limits (docs/quota.md), against the real Keystone of
 * scripts/keystone.sh: the accelerator service registered in the catalog, a registered limit and
 * project limits for `class:FPGA`, read by the conductor through `[oslo_limit]` password auth.
 * - Standalone binds go up to the limit; the next is a 403 (OVER_QUOTA) naming the resource, the
 *   limit and the usage, and changes nothing; a raised limit lets it bind; a v1 attach is held to
 *   the same limit; Nova binds (a provider chosen) are not counted.
 * - 20 binds race against a limit of 5 through two conductors on one database: exactly 5 win,
 *   on every database.
 * - `cyborg up` configured through [quota] and [oslo_limit]: the 403 over HTTP, `GET /v2/quota`,
 *   `cyborg quota show` and the quota rule in explain.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { getArq } from '../../src/db/arqs.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { LimitSource } from '../../src/domain/quota.js'
import { keystoneSettings } from '../../src/openstack/service-auth.js'
import { createUnifiedLimits } from '../../src/openstack/unified-limits.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { testDialects } from '../support/db.js'
import {
  ADMIN_PASSWORD,
  keystoneSkip,
  startKeystone,
  type RunningKeystone,
} from '../support/peers/keystone.js'
import { STORM_HOST as HOST, stormDevices } from '../support/storm-inventory.js'
import { cyborg, cyborgJson } from '../support/cli.js'
import { startService } from '../support/service.js'

const clock = { now: () => new Date() }
const skip = await keystoneSkip()
const dialects = await testDialects()
const instance = (n: number) => `9a0c0000-0000-4000-8000-${String(n).padStart(12, '0')}`

void describe('quota from Keystone unified limits', { skip, timeout: 300_000 }, () => {
  let ks: RunningKeystone
  let serviceId: string
  let limits: LimitSource
  /** The same limits cached for a minute: the race's binds then meet at the database at once. */
  let cachedLimits: LimitSource
  let source: () => LimitSource = () => limits
  const quota: LimitSource = { limitsOf: (p) => source().limitsOf(p) }

  /** A call to Keystone as its admin; resolves with the JSON answer. */
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${ks.url}${path}`, {
      method,
      headers: { 'x-auth-token': await ks.adminToken(), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`)
    return JSON.parse(text) as Record<string, { id: string }[]>
  }
  const projectLimit = async (projectId: string, limit: number) =>
    (
      await admin('POST', '/limits', {
        limits: [
          {
            service_id: serviceId,
            project_id: projectId,
            resource_name: 'class:FPGA',
            resource_limit: limit,
          },
        ],
      })
    ).limits![0]!.id

  before(async () => {
    ks = await startKeystone()
    serviceId = await ks.registerEndpoint('accelerator', 'cyborg', 'http://127.0.0.1:6666/v2')
    await admin('POST', '/registered_limits', {
      registered_limits: [{ service_id: serviceId, resource_name: 'class:FPGA', default_limit: 1 }],
    })
    const settings = keystoneSettings(
      'oslo_limit',
      {
        auth_type: 'password',
        auth_url: ks.url,
        username: 'admin',
        password: ADMIN_PASSWORD,
        system_scope: 'all',
        user_domain_name: 'Default',
        project_domain_name: 'Default',
        timeout: 30,
      },
      'identity',
    )!
    limits = createUnifiedLimits({ settings, serviceType: 'accelerator', cacheMs: 0 })
    cachedLimits = createUnifiedLimits({ settings, serviceType: 'accelerator', cacheMs: 60_000 })
  })
  after(async () => {
    await ks?.stop()
  })

  void it('cyborg up with [quota] driver = unified_limits: 403 over HTTP, quota show, explain', async () => {
    const project = await ks.createProject('quota-up')
    await projectLimit(project, 1)
    const service = await startService({
      env: {
        CYBORG_DEFAULT__HOST: 'quota-host',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_API__NOAUTH_PROJECT_ID: project,
        CYBORG_QUOTA__DRIVER: 'unified_limits',
        CYBORG_QUOTA__CACHE_SECONDS: '0',
        CYBORG_OSLO_LIMIT__AUTH_TYPE: 'password',
        CYBORG_OSLO_LIMIT__AUTH_URL: ks.url,
        CYBORG_OSLO_LIMIT__USERNAME: 'admin',
        CYBORG_OSLO_LIMIT__PASSWORD: ADMIN_PASSWORD,
        CYBORG_OSLO_LIMIT__SYSTEM_SCOPE: 'all',
      },
    })
    try {
      const env = { CYBORG_URL: service.url }
      const made = await cyborg(
        ['device-profile', 'create', 'dp-q', '[{"resources:FPGA": 1}]'],
        env,
      )
      assert.equal(made.code, 0, made.stderr)
      const [a, b] = await Promise.all(
        [1, 2].map(
          async () => (await cyborgJson<{ uuid: string }[]>(['arq', 'create', 'dp-q'], env))[0]!,
        ),
      )
      const bound = await cyborg(
        ['arq', 'bind', a!.uuid, '--host', 'quota-host', '--instance', instance(900)],
        env,
      )
      assert.equal(bound.code, 0, bound.stderr)
      const res = await fetch(`${service.url}/v2/accelerator_requests/${b!.uuid}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          [b!.uuid]: [
            { path: '/hostname', op: 'add', value: 'quota-host' },
            { path: '/instance_uuid', op: 'add', value: instance(901) },
          ],
        }),
      })
      const text = await res.text()
      assert.equal(res.status, 403, text)
      assert.match(
        text,
        new RegExp(
          `Quota exceeded for class:FPGA in project ${project}: limit 1, in use 1, requested 1`,
        ),
      )
      const shown = await cyborgJson<{ quota: { resources: unknown[] } }>(['quota', 'show'], env)
      assert.deepEqual(shown.quota.resources, [{ resource: 'class:FPGA', limit: 1, in_use: 1 }])
      const table = await cyborg(['quota', 'show', '--project', project], env)
      assert.match(table.stdout, /class:FPGA\s+1\s+1\s+0/)
      const explained = await fetch(`${service.url}/v2/device_profiles/dp-q/explain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'openstack-api-version': 'accelerator 2.6' },
        body: '{}',
      })
      const body = (await explained.json()) as {
        groups: { candidates: { rule: string; reason: string }[] }[]
      }
      const rules = body.groups[0]!.candidates.map((c) => c.rule)
      assert.deepEqual(rules, ['quota'], JSON.stringify(body))
      assert.match(
        body.groups[0]!.candidates[0]!.reason,
        /has 1 of its 1 class:FPGA in use \(quota\)/,
      )
      const cli = await cyborg(['explain', 'dp-q', '--project', project], env)
      assert.equal(cli.code, 0, cli.stderr)
      assert.match(cli.stdout, /quota\s+project .* has 1 of its 1 class:FPGA in use \(quota\)/)
      const old = await fetch(`${service.url}/v2/quota`, {
        headers: { 'openstack-api-version': 'accelerator 2.6' },
      })
      assert.equal(old.status, 404, 'GET /v2/quota needs 2.7')
      await old.body?.cancel()
    } finally {
      assert.equal(await service.stop(), 0, service.output())
    }
  })

  for (const dialect of dialects) {
    void describe(`on ${dialect.name}`, { skip: dialect.skip }, () => {
      let db: Awaited<ReturnType<typeof dialect.create>>
      let second: DatabaseHandle
      let conductors: Conductor[]
      let deployable: string

      before(async () => {
        db = await dialect.create()
        second = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 8 })
        conductors = [db, second].map((h) =>
          createConductor(
            { db: h, log: noopLogger, clock, quota },
            { saveIntervalMs: 1, reapIntervalMs: 0 },
          ),
        )
        const list = stormDevices(4, 10) // 40 TEST_PCI FPGA handles, no agent preparation needed
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
        const row = await db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow()
        deployable = row.uuid
      })
      after(async () => {
        for (const c of conductors ?? []) await c.stop()
        if (second !== db) await second?.close()
        await db?.close()
      })

      const arqsOf = async (projectId: string, n: number) =>
        (
          await Promise.all(
            Array.from({ length: n }, () =>
              conductors[0]!.createArqs({ deviceProfileName: 'one', projectId, maxArqs: 64 }),
            ),
          )
        ).flat()
      const bind = (c: Conductor, uuid: string, n: number, extra: { deviceRpUuid?: string } = {}) =>
        c.bindArqs({
          bindings: { [uuid]: { hostname: HOST, instanceUuid: instance(n), ...extra } },
        })

      void it('binds up to the limit, refuses the next with a 403, and binds again once it is raised', async () => {
        const project = await ks.createProject(`quota-${dialect.name}`)
        const limitId = await projectLimit(project, 2)
        const arqs = await arqsOf(project, 4)
        for (const [i, arq] of arqs.slice(0, 2).entries())
          assert.equal((await bind(conductors[0]!, arq.uuid, i))[0]!.state, 'Bound')
        await assert.rejects(
          bind(conductors[1]!, arqs[2]!.uuid, 2),
          (err: Error & { code?: string; details?: Record<string, unknown> }) => {
            assert.equal(err.code, 'OVER_QUOTA')
            assert.equal(
              err.message,
              `Quota exceeded for class:FPGA in project ${project}: limit 2, in use 2, requested 1`,
            )
            assert.deepEqual(err.details, {
              rule: 'quota',
              resource: 'class:FPGA',
              limit: 2,
              in_use: 2,
              requested: 1,
              project_id: project,
            })
            return true
          },
        )
        const refused = await getArq(db.db, arqs[2]!.uuid)
        assert.equal(refused.state, 'Initial', 'a refused bind changes nothing')
        // The v1 API's attach counts against the same limit.
        await assert.rejects(
          conductors[0]!.attachAccelerator({
            uuid: deployable,
            target: { hostname: HOST },
            projectId: project,
          }),
          /Quota exceeded for class:FPGA .* limit 2, in use 2, requested 1/,
        )
        await admin('PATCH', `/limits/${limitId}`, { limit: { resource_limit: 4 } })
        assert.equal((await bind(conductors[1]!, arqs[2]!.uuid, 2))[0]!.state, 'Bound')
        await conductors[0]!.attachAccelerator({
          uuid: deployable,
          target: { hostname: HOST },
          projectId: project,
        })
        await assert.rejects(bind(conductors[0]!, arqs[3]!.uuid, 3), /limit 4, in use 4/)
      })

      void it('without a project limit, the registered default applies', async () => {
        const project = await ks.createProject(`default-${dialect.name}`)
        const [a, b] = await arqsOf(project, 2)
        assert.equal((await bind(conductors[0]!, a!.uuid, 10))[0]!.state, 'Bound')
        await assert.rejects(bind(conductors[0]!, b!.uuid, 11), /limit 1, in use 1/)
      })

      void it('20 binds against a limit of 5 through two conductors: exactly 5 win', async () => {
        const project = await ks.createProject(`race-${dialect.name}`)
        await projectLimit(project, 5)
        const arqs = await arqsOf(project, 20)
        await cachedLimits.limitsOf(project)
        source = () => cachedLimits
        const settled = await Promise.allSettled(
          arqs.map((arq, i) => bind(conductors[i % 2]!, arq.uuid, 100 + i)),
        ).finally(() => (source = () => limits))
        const won = settled.filter((s) => s.status === 'fulfilled')
        assert.equal(won.length, 5, 'exactly the limit binds')
        for (const s of settled)
          if (s.status === 'rejected')
            assert.equal((s.reason as { code?: string }).code, 'OVER_QUOTA', String(s.reason))
        const held = await db.db
          .selectFrom('accelerator_requests')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('project_id', '=', project)
          .where('state', '=', 'Bound')
          .executeTakeFirstOrThrow()
        assert.equal(Number(held.n), 5)
      })
    })
  }
})
