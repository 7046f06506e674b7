/**
 * Helpers of the configuration tests: INI files in a temporary directory, a load with fixed
 * host and working directory, and the assertion that a load fails with one config line.
 */
import { after, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../../src/domain/errors.js'
import { loadConfig, type LoadConfigOptions } from '../../src/config/config.js'

let dir: string
let n = 0
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-config-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

/** Writes an INI file into the temp dir and returns its path. */
export function file(text: string, name = `c${++n}.conf`): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

export const load = (o: Partial<LoadConfigOptions> = {}) =>
  loadConfig({ files: [], env: {}, hostname: 'node-1', cwd: '/srv/cyborg', ...o })

/** Asserts that loading throws a ConfigError with exactly `message`, on one line. */
export function rejects(o: Partial<LoadConfigOptions>, message: string | RegExp) {
  assert.throws(
    () => load(o),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
      assert.equal(err.code, 'CONFIG_INVALID')
      assert.ok(!err.message.includes('\n'), 'message must be one line')
      if (typeof message === 'string') assert.equal(err.message, message)
      else assert.match(err.message, message)
      return true
    },
  )
}
