import { test } from 'node:test'
import assert from 'node:assert/strict'
import { cleanSummary } from './commands.js'
import { safeLine } from './client.js'

const D = '2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11'

test("device clean's line: the units asked again or put back, or that there were none", () => {
  assert.equal(
    cleanSummary({ device: D, units: ['h1'], forced: false }),
    `device ${D}: 1 unit asked to clean again (see cyborg custody list --device ${D} --kind clean): h1`,
  )
  assert.equal(
    cleanSummary({ device: D, units: ['h1', 'h2'], forced: true }),
    `device ${D}: 2 units put back in service without a clean (an override in the custody ledger): h1, h2`,
  )
  assert.equal(
    cleanSummary({ device: D, units: [], forced: false }),
    `device ${D}: no unit left cleaning or failed; nothing to clean`,
  )
  assert.equal(
    cleanSummary({ device: D, units: [], forced: true }),
    `device ${D}: no unit left cleaning or failed; nothing put back in service`,
  )
})

test('an error line: URL passwords and the token masked, long values cut, one line', () => {
  assert.equal(
    safeLine('cannot reach https://u:p%40ss@h:1/x and\nx-auth-token tok-12345 failed', [
      'tok-12345',
    ]),
    'cannot reach https://u:***@h:1/x and x-auth-token *** failed',
  )
  const long = 'y'.repeat(1000)
  assert.equal(safeLine(`bad value '${long}' given`), `bad value '${'y'.repeat(63)}… given`)
  // Prose, and quoted values far apart, are left whole.
  const prose = `the spec is no longer "${'a'.repeat(20)}"; ${'b '.repeat(40)} not "${'c'.repeat(20)}"`
  assert.equal(safeLine(prose), prose)
  assert.equal(safeLine('w '.repeat(400)).length, 501)
})
