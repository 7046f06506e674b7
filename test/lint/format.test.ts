/**
 * `npm run lint` runs `prettier --check .` with the repo's .prettierrc.json and .prettierignore.
 * These tests check made-up sources at real paths through Prettier's API (nothing is written to
 * disk): an unformatted file fails the check, a formatted one passes.
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import * as prettier from 'prettier'
import { ROOT } from '../support/service.js'

const FILE = path.join(ROOT, 'src/config/config.ts')

/** Prettier's options for `file`, as the CLI resolves them from the repo's config. */
async function optionsFor(file: string): Promise<prettier.Options> {
  const config = await prettier.resolveConfig(file, { editorconfig: false })
  assert.ok(config, `no Prettier config found for ${file}`)
  return { ...config, filepath: file }
}

const formatted = `import { InvalidInputError } from '../domain/errors.js'

export function parsePort(text: string): number {
  const port = Number(text)
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidInputError(\`invalid port: \${text}\`, { details: { text, min: 1, max: 65535 } })
  }
  return port
}
`

describe('prettier enforces the format', () => {
  test('the repo config is the house style', async () => {
    const { printWidth, semi, singleQuote, trailingComma } = await optionsFor(FILE)
    assert.deepEqual(
      { printWidth, semi, singleQuote, trailingComma },
      {
        printWidth: 100,
        semi: false,
        singleQuote: true,
        trailingComma: 'all',
      },
    )
  })

  test('a formatted file passes', async () => {
    assert.equal(await prettier.check(formatted, await optionsFor(FILE)), true)
  })

  test('an unformatted file fails, and formatting it gives the house style', async () => {
    const options = await optionsFor(FILE)
    const unformatted = formatted.replaceAll("'", '"').replace('Number(text)', 'Number(text);')
    assert.equal(await prettier.check(unformatted, options), false)
    assert.equal(await prettier.format(unformatted, options), formatted)
  })

  test('a line past 100 columns fails', async () => {
    const options = await optionsFor(FILE)
    const long = `export const limits = { minPort: 1, maxPort: 65535, minTimeoutMs: 100, maxTimeoutMs: 600000, retries: 3 }\n`
    assert.ok(long.length > 101, 'the made-up line must be too long')
    assert.equal(await prettier.check(long, options), false)
    assert.ok(
      (await prettier.format(long, options)).split('\n').every((line) => line.length <= 100),
    )
  })

  test('recorded fixtures and the lockfile are not checked', async () => {
    const ignorePath = [path.join(ROOT, '.gitignore'), path.join(ROOT, '.prettierignore')]
    const ignored = async (file: string) =>
      (await prettier.getFileInfo(path.join(ROOT, file), { ignorePath })).ignored
    assert.equal(await ignored('src/drivers/__fixtures__/nvidia-gpu/mig/expected.json'), true)
    assert.equal(await ignored('package-lock.json'), true)
    assert.equal(await ignored('src/domain/errors.ts'), false)
  })
})
