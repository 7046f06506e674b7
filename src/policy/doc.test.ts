/** docs/policy.md's rule table is generated from the defaults; regenerate: UPDATE_POLICY_DOC=1 node --import tsx --test src/policy/doc.test.ts */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { DEFAULT_RULES } from './enforcer.js'
import { renderRulesMarkdown } from './render.js'

const DOC = new URL('../../docs/policy.md', import.meta.url)
const BEGIN = '<!-- rules:begin (generated from src/policy; see src/policy/doc.test.ts) -->\n'
const END = '<!-- rules:end -->'

void test('docs/policy.md lists every rule with its current default', () => {
  const text = readFileSync(DOC, 'utf8')
  const start = text.indexOf(BEGIN)
  const end = text.indexOf(END)
  assert.ok(start >= 0 && end > start, 'docs/policy.md has the rules:begin and rules:end markers')
  const current = text.slice(start + BEGIN.length, end)
  const wanted = renderRulesMarkdown(DEFAULT_RULES)
  if (current !== wanted && process.env['UPDATE_POLICY_DOC'] === '1') {
    writeFileSync(DOC, text.slice(0, start + BEGIN.length) + wanted + text.slice(end))
    return
  }
  assert.equal(
    current,
    wanted,
    'docs/policy.md is stale: UPDATE_POLICY_DOC=1 node --import tsx --test src/policy/doc.test.ts',
  )
})
