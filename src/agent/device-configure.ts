/**
 * Re-partitioning a device (AgentRpc 1.6 `configureDevice`; docs/agent.md, "Configure"): finds
 * the enabled driver whose last discovery has the device with the asked control path (as
 * `install` does), runs its `configure` with the change, then rediscovers and reports at once, so
 * that the conductor holds the new inventory before the call is answered. A CONFIGURE_FAILED
 * whose layout was not put back is reported too before it is answered (the conductor fences the
 * device; its inventory shows what the host has).
 *
 * A driver that keeps the layout in its options (nvidia-gpu's `vgpu_type_by_address`) answers them:
 * they go through driver-admin's `updateDriverOptions` (merged into the overrides, saved in the
 * agent cache, the driver rebuilt, then the rediscovery), so the layout survives a restart. The
 * host keeps an SR-IOV count itself. Configures run one at a time; the host probe's cached reads
 * are forgotten first, so that the driver reads the device as it is.
 */
import type { AcceleratorDriver } from '../drivers/driver.js'
import type { AgentRpc, ConfigureDeviceResult, DriverAdminState } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { AppError, DriverError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import { parseDeviceConfigChange } from '../domain/device-config.js'
import { controlPathAddress, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import { parseControlPath } from './driver-admin-input.js'

export interface DeviceConfigureDeps {
  /** The enabled driver whose last discovery matched, and the device (DriverAdmin.owner). */
  owner(
    match: (d: DiscoveredDevice) => boolean,
  ): Promise<{ driver: AcceleratorDriver; device: DiscoveredDevice } | undefined>
  /** driver-admin's: merges options into a driver's overrides, saves, rebuilds, rediscovers. */
  updateDriverOptions: AgentRpc['updateDriverOptions']
  /** Discovers and reports now (the agent's serialized discovery). */
  rediscover(): Promise<InventoryReportResult>
  /** Forgets the host probe's cached reads (the core's caching probe). @default nothing */
  freshReads?: (() => void) | undefined
  /** Aborted when the agent stops: a configure not yet begun is refused. */
  signal: AbortSignal
  log: Logger
}

const field = (req: unknown, name: string): unknown =>
  req !== null && typeof req === 'object' ? (req as Record<string, unknown>)[name] : undefined

/** An error's code and message, as a failed report is answered. */
const failure = (err: unknown) => ({
  code: err instanceof AppError ? err.code : 'INTERNAL_ERROR',
  message: errorMessage(err),
})

export function createDeviceConfigurer(
  deps: DeviceConfigureDeps,
): Pick<AgentRpc, 'configureDevice'> {
  const { owner, log } = deps
  let queue: Promise<unknown> = Promise.resolve()

  const report = (): Promise<DriverAdminState['report']> =>
    deps.rediscover().then(
      (result) => ({ ok: true as const, result }),
      (err: unknown) => ({ ok: false as const, ...failure(err) }),
    )

  const configure = async (req: unknown): Promise<ConfigureDeviceResult> => {
    const address = parseControlPath(req)
    const change = parseDeviceConfigChange(field(req, 'change'))
    const hit = await owner((d) => controlPathAddress(d.controlPath) === address)
    if (!hit)
      throw new NotFoundError(`no enabled driver on this host reported a device at ${address}`, {
        code: 'DEVICE_NOT_ON_HOST',
        details: { address },
      })
    const { driver, device } = hit
    if (!driver.configure)
      throw new InvalidInputError(`driver ${driver.name} cannot configure devices`, {
        code: 'CONFIGURE_UNSUPPORTED',
        details: { field: 'change', driver: driver.name, address },
      })
    deps.freshReads?.()
    let outcome
    try {
      outcome = await driver.configure(device, change, { signal: deps.signal })
    } catch (err) {
      // A thrown value that is no AppError is not the driver's own account: whether the host
      // changed is unknown (no `restored`).
      const failed =
        err instanceof AppError
          ? err
          : new DriverError(
              `driver ${driver.name} could not configure ${address}: ${errorMessage(err)}`,
              { code: 'CONFIGURE_FAILED', details: { driver: driver.name, address }, cause: err },
            )
      // A layout not put back: report what the host has now, before the error is answered.
      if (failed.code === 'CONFIGURE_FAILED' && failed.details?.restored !== true) await report()
      throw failed
    }
    const { changed, previous, applied, options } = outcome
    // Options hold the layout: saved and the driver rebuilt before the rediscovery.
    const reported =
      options === undefined
        ? await report()
        : (await deps.updateDriverOptions({ driver: driver.name, options })).report
    log.info(
      { driver: driver.name, address, change, previous, applied, changed },
      changed ? 'device re-partitioned' : 'device already had that layout',
    )
    return { driver: driver.name, address, changed, previous, applied, report: reported }
  }

  return {
    configureDevice(req) {
      const run = queue.then(() => configure(req))
      queue = run.catch(() => {})
      return run
    },
  }
}
