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
    const ids = await ruleIds('src/conductor/conductor.ts', "import { createAgent } from '../agent/agent.js'\nexport const x = createAgent\n")
    assert.ok(ids.includes('import-x/no-restricted-paths'), ids.join(', '))
  })

  test('the API importing the conductor fails', async () => {
    const ids = await ruleIds('src/api/app.ts', "import { createConductor } from '../conductor/conductor.js'\nexport const x = createConductor\n")
    assert.ok(ids.includes('import-x/no-restricted-paths'), ids.join(', '))
  })

  test('an import cycle fails', async () => {
    // src/db/devices.ts imports src/domain/errors.ts; making errors.ts import it back closes a cycle.
    const ids = await ruleIds('src/domain/errors.ts', "import { getDevice } from '../db/devices.js'\nexport const x = getDevice\n")
    assert.ok(ids.includes('import-x/no-cycle'), ids.join(', '))
    assert.ok(ids.includes('import-x/no-restricted-paths'), 'domain must not import db either')
  })

  test('a type-only import cycle fails', async () => {
    // agent-rpc.ts imports admin-types.ts; a type import back closes a cycle that import-x/no-cycle
    // skips (it ignores type-only imports), so the repo's own rule has to catch it.
    const ids = await ruleIds('src/rpc/admin-types.ts', "import type { AgentRpc } from './agent-rpc.js'\nexport type X = AgentRpc\n")
    assert.deepEqual(ids, ['cyborg/no-type-import-cycle'])
  })

  test('a cycle closed by inline type specifiers, across files, fails', async () => {
    // errors.ts ← db/devices.ts: `import { type … }` counts as type-only, as it does for import-x.
    const ids = await ruleIds('src/domain/errors.ts', "import { type DeviceFilter } from '../db/devices.js'\nexport type X = DeviceFilter\n")
    assert.ok(ids.includes('cyborg/no-type-import-cycle'), ids.join(', '))
    assert.ok(!ids.includes('import-x/no-cycle'), ids.join(', '))
  })

  test('a type-only import without a cycle passes', async () => {
    const ids = await ruleIds('src/rpc/admin-types.ts', "import type { PciAddress } from '../domain/inventory.js'\nexport type X = PciAddress\n")
    assert.deepEqual(ids, [])
  })

  test('kysely outside src/db fails', async () => {
    const ids = await ruleIds('src/api/app.ts', "import { Kysely } from 'kysely'\nexport const x = Kysely\n")
    assert.ok(ids.includes('no-restricted-imports'), ids.join(', '))
  })

  test('allowed imports pass', async () => {
    const ids = await ruleIds('src/conductor/conductor.ts', "import { getDevice } from '../db/devices.js'\nexport const x = getDevice\n")
    assert.deepEqual(ids, [])
  })
})
