import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { renderSample } from './sample.js'
import { loadConfig } from './config.js'
import { schema } from './schema.js'

const shipped = new URL('../../etc/cyborg.conf.sample', import.meta.url)

void test('etc/cyborg.conf.sample is current (regenerate: npm run gen:config-sample)', () => {
  assert.equal(readFileSync(shipped, 'utf8'), renderSample())
})

void test('the sample documents every option of every section', () => {
  const text = renderSample()
  for (const [section, options] of Object.entries(schema)) {
    assert.ok(text.includes(`\n[${section}]\n`), section)
    for (const name of Object.keys(options))
      assert.match(text, new RegExp(`^#${name} =`, 'm'), `${section}.${name}`)
  }
  assert.ok(
    text.split('\n').every((l) => l.length <= 79 || !l.startsWith('# ')),
    'help lines wrap at 79 columns',
  )
})

void test('the sample loads as is, and with every default uncommented it still loads to the defaults', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-sample-'))
  try {
    const asIs = join(dir, 'as-is.conf')
    writeFileSync(asIs, renderSample())
    const opts = { env: {}, hostname: 'h', cwd: '/srv' }
    const defaults = loadConfig({ files: [], ...opts })
    assert.deepEqual(loadConfig({ files: [asIs], ...opts }), defaults)

    // Uncomment every option except placeholders like <the machine host name>.
    const uncommented = renderSample().replace(/^#([a-z_]+ =(?! <).*)$/gm, '$1')
    const all = join(dir, 'uncommented.conf')
    writeFileSync(all, uncommented)
    assert.deepEqual(loadConfig({ files: [all], ...opts }), defaults)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
