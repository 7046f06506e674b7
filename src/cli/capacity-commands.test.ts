import { test } from 'node:test'
import assert from 'node:assert/strict'
import { BAR_WIDTH, capacityBar, capacityColumns, LEGEND } from './capacity-commands.js'
import { renderTable } from './output.js'

const row = (used: number, fenced: number, reserved: number, free: number) => ({
  resource_class: 'PGPU',
  hostname: 'c1',
  traits: ['CUSTOM_A', 'CUSTOM_B'],
  device_type: null,
  total: used + fenced + reserved + free,
  used,
  reserved,
  fenced,
  cleaning: 0,
  free,
})

test('the bar: each bucket in proportion, always 20 wide, empty without units', () => {
  assert.equal(capacityBar(row(5, 5, 5, 5)), '█████▓▓▓▓▓▒▒▒▒▒░░░░░')
  assert.equal(capacityBar(row(1, 0, 0, 2)), '███████░░░░░░░░░░░░░')
  assert.equal(capacityBar(row(0, 0, 0, 0)), '')
  for (const r of [row(1, 1, 1, 0), row(3, 0, 7, 11), row(1, 0, 0, 999)]) {
    assert.equal([...capacityBar(r)].length, BAR_WIDTH, JSON.stringify(r))
  }
  // A bucket with units is never hidden by rounding.
  assert.match(capacityBar(row(1, 0, 0, 999)), /^█░{19}$/)
  assert.equal(LEGEND, '█ used  ▓ fenced  ▒ reserved  ▞ cleaning  ░ free')
})

test('the table: key columns by grouping, the bar only when asked', () => {
  const plain = renderTable([row(1, 0, 1, 2)], capacityColumns(undefined, false))
  assert.equal(
    plain,
    [
      'Resource Class  Host  Traits             Total  Used  Reserved  Fenced  Cleaning  Free',
      '--------------  ----  -----------------  -----  ----  --------  ------  --------  ----',
      'PGPU            c1    CUSTOM_A,CUSTOM_B  4      1     1         0       0         2',
      '',
    ].join('\n'),
  )
  const byHost = capacityColumns('host', true).map((c) => c.header)
  assert.deepEqual(byHost, [
    'Host',
    'Total',
    'Used',
    'Reserved',
    'Fenced',
    'Cleaning',
    'Free',
    'Bar',
  ])
  assert.equal(capacityColumns('device_type', false)[0]!.header, 'Device Type')
  assert.equal(capacityColumns('resource_class', false)[0]!.header, 'Resource Class')
})
