import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createDrivers, DRIVER_ALIASES, DRIVERS, driverNames } from './index.js'
import { createFixtureHostProbe } from './host-probe/fixture-host-probe.js'
import { ConfigError } from '../domain/errors.js'

void describe('driver registry', () => {
  const deps = { host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' }

  void it('builds the named drivers once each, accepting Cyborg entry-point names', () => {
    const drivers = createDrivers(['fake', 'fake_driver'], deps)
    assert.deepEqual(
      drivers.map((d) => d.name),
      ['fake'],
    )
    assert.ok(driverNames().includes('fake'))
  })

  void it('refuses an unknown name with a ConfigError listing the valid ones', () => {
    assert.throws(
      () => createDrivers(['fake', 'nvidia'], deps),
      (err) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.code, 'INVALID_DRIVER')
        assert.match(err.message, /"nvidia".*possible values are: fake/)
        return true
      },
    )
    assert.throws(() => createDrivers(['toString'], deps), ConfigError)
  })

  void it('maps every Cyborg alias to a registered driver whose name is its registry key', () => {
    for (const [alias, name] of Object.entries(DRIVER_ALIASES)) {
      assert.ok(Object.hasOwn(DRIVERS, name), alias)
      assert.equal(createDrivers([alias], deps)[0]?.name, name)
    }
    for (const name of driverNames()) assert.equal(createDrivers([name], deps)[0]?.name, name)
  })
})
