/**
 * The layering of docs/ARCHITECTURE.md is enforced by `npm run lint`. These tests lint made-up
 * contents at real paths (nothing is written to disk) and check that the rules fire.
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { ESLint } from 'eslint'
import { ROOT } from '../support/service.js'

const eslint = new ESLint({ cwd: ROOT })

async function ruleIds(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) })
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message)
}

describe('lint enforces the architecture', () => {
  test('a service importing another service fails', async () => {
    const ids = await ruleIds(
      'src/conductor/conductor.ts',
      "import { createAgent } from '../agent/agent.js'\nexport const x = createAgent\n",
    )
    assert.ok(ids.includes('import-x/no-restricted-paths'), ids.join(', '))
  })

  test('the API importing the conductor fails', async () => {
    const ids = await ruleIds(
      'src/api/app.ts',
      "import { createConductor } from '../conductor/conductor.js'\nexport const x = createConductor\n",
    )
    assert.ok(ids.includes('import-x/no-restricted-paths'), ids.join(', '))
  })

  test('the dashboard’s browser code importing src/ fails', async () => {
    const ids = await ruleIds(
      'web/fleet/fleet-data.ts',
      "import { NotFoundError } from '../../src/domain/errors.js'\nexport const x = NotFoundError\n",
    )
    assert.ok(ids.includes('no-restricted-imports'), ids.join(', '))
  })

  test('an import cycle fails', async () => {
    // src/db/reads/device-reads.ts imports src/domain/errors.ts; making errors.ts import it back closes a cycle.
    const ids = await ruleIds(
      'src/domain/errors.ts',
      "import { getDevice } from '../db/reads/device-reads.js'\nexport const x = getDevice\n",
    )
    assert.ok(ids.includes('import-x/no-cycle'), ids.join(', '))
    assert.ok(ids.includes('import-x/no-restricted-paths'), 'domain must not import db either')
  })

  test('a type-only import cycle fails', async () => {
    // agent-rpc.ts imports admin-types.ts; a type import back closes a cycle that import-x/no-cycle
    // skips (it ignores type-only imports), so the repo's own rule has to catch it.
    const ids = await ruleIds(
      'src/rpc/admin-types.ts',
      "import type { AgentRpc } from './agent-rpc.js'\nexport type X = AgentRpc\n",
    )
    assert.deepEqual(ids, ['cyborg/no-type-import-cycle'])
  })

  test('a cycle closed by inline type specifiers, across files, fails', async () => {
    // errors.ts ← db/reads/device-reads.ts: `import { type … }` counts as type-only, as it does for import-x.
    const ids = await ruleIds(
      'src/domain/errors.ts',
      "import { type DeviceFilter } from '../db/reads/device-reads.js'\nexport type X = DeviceFilter\n",
    )
    assert.ok(ids.includes('cyborg/no-type-import-cycle'), ids.join(', '))
    assert.ok(!ids.includes('import-x/no-cycle'), ids.join(', '))
  })

  test('a type-only import without a cycle passes', async () => {
    const ids = await ruleIds(
      'src/rpc/admin-types.ts',
      "import type { PciAddress } from '../domain/inventory.js'\nexport type X = PciAddress\n",
    )
    assert.deepEqual(ids, [])
  })

  test('kysely outside src/db fails', async () => {
    const ids = await ruleIds(
      'src/api/app.ts',
      "import { Kysely } from 'kysely'\nexport const x = Kysely\n",
    )
    assert.ok(ids.includes('no-restricted-imports'), ids.join(', '))
  })

  test('allowed imports pass', async () => {
    const ids = await ruleIds(
      'src/conductor/conductor.ts',
      "import { getDevice } from '../db/reads/device-reads.js'\nexport const x = getDevice\n",
    )
    assert.deepEqual(ids, [])
  })

  test('a write function of src/db imported into src/api fails; reads pass', async () => {
    const write = await ruleIds(
      'src/api/v2/devices.ts',
      "import { updateDeviceStatus } from '../../db/devices.js'\nexport const x = updateDeviceStatus\n",
    )
    assert.ok(write.includes('no-restricted-imports'), write.join(', '))
    const release = await ruleIds(
      'src/api/v2/arqs.ts',
      "import { releaseAttachHandle } from '../../db/attach-handles.js'\nexport const x = releaseAttachHandle\n",
    )
    assert.ok(release.includes('no-restricted-imports'), release.join(', '))
    const read = await ruleIds(
      'src/api/v2/devices.ts',
      "import { getDevice, listDevices } from '../../db/reads/device-reads.js'\nexport const x = [getDevice, listDevices]\n",
    )
    assert.deepEqual(read, [])
  })

  test('a write module of src/db imported into src/api fails', async () => {
    const ids = await ruleIds(
      'src/api/app.ts',
      "import { createGroupCommitter } from '../db/group-commit.js'\nexport const x = createGroupCommitter\n",
    )
    assert.ok(ids.includes('no-restricted-imports'), ids.join(', '))
    const types = await ruleIds(
      'src/api/app.ts',
      "import type { GroupCommitter } from '../db/group-commit.js'\nexport type X = GroupCommitter\n",
    )
    assert.ok(types.includes('no-restricted-imports'), types.join(', '))
  })

  test('src/api importing src/db outside reads/ fails, even a read or a type', async () => {
    const read = await ruleIds(
      'src/api/v2/devices.ts',
      "import { getReportHash } from '../../db/service-rows.js'\nexport const x = getReportHash\n",
    )
    assert.ok(read.includes('no-restricted-imports'), read.join(', '))
    const type = await ruleIds(
      'src/api/types.ts',
      "import type { DatabaseHandle } from '../db/core/connection.js'\nexport type X = DatabaseHandle\n",
    )
    assert.ok(type.includes('no-restricted-imports'), type.join(', '))
  })

  test('a read model importing a write module of src/db fails; core and other reads pass', async () => {
    const write = await ruleIds(
      'src/db/reads/ping.ts',
      "import { createArqs } from '../arqs.js'\nexport const x = createArqs\n",
    )
    assert.ok(write.includes('no-restricted-imports'), write.join(', '))
    const ok = await ruleIds(
      'src/db/reads/ping.ts',
      "import { paginate } from '../core/pagination.js'\nimport { getDevice } from './device-reads.js'\nexport const x = [paginate, getDevice]\n",
    )
    assert.deepEqual(ok, [])
    const setup = await ruleIds(
      'src/db/reads/arq-views.test.ts',
      "import { createArqs } from '../arqs.js'\nexport const x = createArqs\n",
    )
    assert.deepEqual(setup, [])
  })

  test('the agent importing a concrete driver fails; the driver port passes', async () => {
    const concrete = await ruleIds(
      'src/agent/agent.ts',
      "import { DRIVERS } from '../drivers/index.js'\nexport const x = DRIVERS\n",
    )
    assert.ok(concrete.includes('no-restricted-imports'), concrete.join(', '))
    const port = await ruleIds(
      'src/agent/agent.ts',
      "import { REMOTE_DRIVER } from '../drivers/driver.js'\nexport const x = REMOTE_DRIVER\n",
    )
    assert.deepEqual(port, [])
  })
})
