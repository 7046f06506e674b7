/**
 * The house's size rules (issue 29, docs/ARCHITECTURE.md "Layers") are lint rules: a function over
 * 150 lines outside the tests, a file over 400 lines, and imports out of order (Node's modules,
 * then packages, then the project's files) fail `npm run lint`. Made-up contents at real paths,
 * nothing written to disk.
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

/** A function of `lines` lines in all (its two braces included). */
const functionOf = (lines: number): string =>
  [
    'export function big(): number {',
    '  let n = 0',
    ...Array(lines - 4).fill('  n++'),
    '  return n',
    '}',
  ].join('\n') + '\n'

describe('lint enforces the size of the house', () => {
  test('a function over 150 lines fails in src/, a function of 150 passes', async () => {
    assert.ok(
      (await ruleIds('src/domain/ids.ts', functionOf(151))).includes('max-lines-per-function'),
    )
    assert.ok(
      !(await ruleIds('src/domain/ids.ts', functionOf(150))).includes('max-lines-per-function'),
    )
  })

  test('tests are excepted from the function rule', async () => {
    const ids = await ruleIds('src/domain/ids.test.ts', functionOf(200))
    assert.ok(!ids.includes('max-lines-per-function'), ids.join(', '))
  })

  test('a file over 400 lines fails', async () => {
    const code =
      Array.from({ length: 401 }, (_, i) => `export const v${i} = ${i}`).join('\n') + '\n'
    assert.ok((await ruleIds('src/domain/ids.ts', code)).includes('max-lines'))
  })

  test('a package imported after a project file fails; Node, packages, project passes', async () => {
    const wrong =
      "import { x } from './time.js'\nimport { Type } from '@sinclair/typebox'\nexport const y = [x, Type]\n"
    assert.ok((await ruleIds('src/domain/ids.ts', wrong)).includes('import-x/order'))
    const right =
      "import { randomUUID } from 'node:crypto'\nimport { Type } from '@sinclair/typebox'\n" +
      "import { x } from './time.js'\nexport const y = [randomUUID, Type, x]\n"
    assert.ok(!(await ruleIds('src/domain/ids.ts', right)).includes('import-x/order'))
  })
})
