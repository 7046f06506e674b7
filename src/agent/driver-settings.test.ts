/**
 * Driver settings (driver-settings.ts): a name or alias resolves to a configured driver, an unknown
 * one is DRIVER_NOT_FOUND listing the known; a rebuild merges the overrides over the configured
 * options, a refused option is a 4xx naming `options`, and an agent without a factory or driver
 * deps refuses to rebuild (DRIVER_NOT_REBUILDABLE).
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFakeDriver } from '../drivers/fake/fake.js'
import { createFixtureHostProbe } from '../drivers/host-probe/fixture-host-probe.js'
import type { DriverDeps, DriverFactory } from '../drivers/driver.js'
import { ConfigError, ConflictError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import { buildDriver, failure, resolveDriver } from './driver-settings.js'

const driverDeps: DriverDeps = { host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' }

describe('driver settings', () => {
  it('resolves a name or an alias; an unknown one is DRIVER_NOT_FOUND listing the known', () => {
    assert.equal(resolveDriver(['fake', 'pci'], { fake_driver: 'fake' }, 'fake_driver'), 'fake')
    assert.equal(resolveDriver(['fake', 'pci'], {}, 'pci'), 'pci')
    assert.throws(
      () => resolveDriver(['fake'], { other: 'nvidia-gpu' }, 'other'),
      (err: unknown) =>
        err instanceof NotFoundError &&
        err.code === 'DRIVER_NOT_FOUND' &&
        /known drivers: fake/.test(err.message),
    )
    assert.throws(() => resolveDriver([], {}, 'x'), /known drivers: \(none\)/)
  })

  it('rebuilds with the overrides merged over the configured options', () => {
    const seen: Record<string, string>[] = []
    const factory: DriverFactory = (deps, options = {}) => {
      seen.push(options)
      return createFakeDriver(deps, {})
    }
    const built = buildDriver(
      { factories: { fake: factory }, baseOptions: { fake: { a: '1', b: '2' } }, driverDeps },
      'fake',
      { b: '3' },
    )
    assert.equal(built.name, 'fake')
    assert.deepEqual(seen, [{ a: '1', b: '3' }])
  })

  it('a refused option is InvalidInputError naming options; no factory or deps is a conflict', () => {
    const refusing: DriverFactory = () => {
      throw new ConfigError('bad spec', { code: 'BAD_SPEC', details: { option: 'device_spec' } })
    }
    assert.throws(
      () => buildDriver({ factories: { x: refusing }, baseOptions: {}, driverDeps }, 'x', {}),
      (err: unknown) =>
        err instanceof InvalidInputError &&
        err.code === 'BAD_SPEC' &&
        (err.details as { field: string }).field === 'options',
    )
    assert.throws(
      () => buildDriver({ factories: {}, baseOptions: {}, driverDeps }, 'x', {}),
      (err: unknown) => err instanceof ConflictError && err.code === 'DRIVER_NOT_REBUILDABLE',
    )
    assert.throws(
      () =>
        buildDriver(
          { factories: { x: refusing }, baseOptions: {}, driverDeps: undefined },
          'x',
          {},
        ),
      (err: unknown) => err instanceof ConflictError && err.code === 'DRIVER_NOT_REBUILDABLE',
    )
  })

  it('failure: an AppError keeps its code, anything else is INTERNAL_ERROR', () => {
    assert.deepEqual(failure(new NotFoundError('gone', { code: 'GONE' })), {
      code: 'GONE',
      message: 'gone',
    })
    assert.equal(failure(new Error('boom')).code, 'INTERNAL_ERROR')
  })
})
