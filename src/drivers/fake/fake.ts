/**
 * The fake driver: one static FPGA with 16 TEST_PCI attach handles, matching OpenStack Cyborg's
 * `fake_driver` field for field, so device profiles written for real Cyborg's CI
 * (`resources:FPGA=1`, `trait:CUSTOM_FAKE_DEVICE=required`) work unchanged. It never touches the
 * host, but for reading the image it programs (fake-program.ts).
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import {
  AttachType,
  DeviceType,
  type DiscoveredDevice,
  type PciAddress,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import { AppError, InvalidInputError } from '../../domain/errors.js'
import type { DeviceStatsCapability } from '../../domain/device-telemetry.js'
import { fakeSampleValues } from './fake-telemetry.js'
import { cleanSettings } from '../clean.js'
import { createFakeCleanSteps } from './fake-clean.js'
import { createFakeProgrammer } from './fake-program.js'

/** Number of accelerators (and TEST_PCI handles) on the fake device. */
export const FAKE_ACCELERATORS = 16

/** The fake device's control path, as real Cyborg reports it. */
export const FAKE_CONTROL_PATH: PciAddress = {
  domain: '0000',
  bus: '0c',
  device: '00',
  function: '0',
}

/** `<host>_FakeDevice`, with every non-alphanumeric character of the host turned into `_`. */
export function fakeDeployableName(hostname: string): string {
  return `${hostname.replace(/[^A-Za-z0-9]/g, '_')}_FakeDevice`
}

/** The address of TEST_PCI handle `fn` (1-based): eight functions per device number, as real Cyborg numbers them. */
export function fakeHandleAddress(fn: number): PciAddress {
  return {
    domain: '0000',
    bus: '0c',
    device: String(Math.floor(fn / 8)).padStart(2, '0'),
    function: String(fn % 8),
  }
}

/**
 * Creates the fake driver; `deps.hostname` names its deployable. Options (`cyborg update-driver
 * fake --option health=failed`, for tests and demos): `health` (ok, degraded or failed; default
 * ok) and `health_reason`, what its device then reports; `serial`, the serial number its device
 * reports (its identity, docs/identity.md; default none: the control path is); `sample_<value>`
 * and `sample_counter_<name>`, the telemetry it reports (fake-telemetry.ts); `clean`, `clean_timeout`
 * (default 60 s), `clean_delay_ms`, `clean_outcome`, `clean_evidence` and `clean_verify`, what its
 * clean step does (fake-clean.ts, docs/cleaning.md); `program_delay_ms` and `program_outcome`, what
 * its program step does (fake-program.ts, docs/fpga.md).
 */
export function createFakeDriver(
  deps: DriverDeps,
  options: Record<string, string> = {},
): AcceleratorDriver & DeviceStatsCapability {
  const name = fakeDeployableName(deps.hostname)
  const health = fakeHealth(options)
  const serial = options.serial?.trim()
  const sample = fakeSampleValues(options)
  const { domain, bus, device, function: fn } = FAKE_CONTROL_PATH
  const controlPath = `${domain}:${bus}:${device}.${fn}`
  const programmer = createFakeProgrammer(deps.host, options)
  return {
    name: 'fake',
    deviceType: DeviceType.FPGA,
    cleanSettings: cleanSettings('fake', options, 60),
    ...createFakeCleanSteps(options),
    async discover(options = {}) {
      if (options.signal?.aborted) {
        throw new AppError('fake discovery aborted', {
          code: 'ABORTED',
          cause: options.signal.reason,
        })
      }
      // A fresh object graph on every call: callers may mutate what they get.
      const device: DiscoveredDevice = {
        type: DeviceType.FPGA,
        vendor: '0xABCD',
        model: 'miss model info',
        stdBoardInfo: { device_id: '0xabcd', class: 'Fake class' },
        vendorBoardInfo: { fake_vendor_info: 'fake_info' },
        controlPath: { type: 'PCI', info: { ...FAKE_CONTROL_PATH } },
        ...(serial ? { serial } : {}),
        ...(health === undefined ? {} : { health: { ...health } }),
        deployables: [
          {
            name,
            numAccelerators: FAKE_ACCELERATORS,
            driverName: 'fake',
            attributes: [
              { key: 'rc', value: 'FPGA' },
              { key: 'trait0', value: 'CUSTOM_FAKE_DEVICE' },
              ...programmer.attributes(),
            ],
            attachHandles: Array.from({ length: FAKE_ACCELERATORS }, (_, i) => ({
              type: AttachType.TEST_PCI,
              info: { ...fakeHandleAddress(i + 1) },
            })),
          },
        ],
      }
      return [device]
    },
    program: programmer.program,
    /** The values of the `sample_*` options, as its device's usage; none without them. */
    deviceStats: async () => (sample ? [{ controlPath, values: structuredClone(sample) }] : []),
  }
}

const HEALTH_STATES = ['ok', 'degraded', 'failed', 'unknown'] as const

/** The health the fake device reports, from the driver's options; undefined when ok and unreasoned. */
function fakeHealth(options: Record<string, string>): ReportedHealth | undefined {
  const state = options.health ?? 'ok'
  if (!(HEALTH_STATES as readonly string[]).includes(state)) {
    throw new InvalidInputError(
      `Invalid input for field 'health': must be one of: ${HEALTH_STATES.join(', ')}`,
      { details: { field: 'health' } },
    )
  }
  if (state === 'ok') return undefined
  const reason = options.health_reason
  return { state: state as ReportedHealth['state'], ...(reason ? { reason } : {}) }
}
