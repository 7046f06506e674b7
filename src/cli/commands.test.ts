import { test } from 'node:test'
import assert from 'node:assert/strict'
import { cleanSummary } from './commands.js'

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
