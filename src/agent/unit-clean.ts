/**
 * The agent's clean of one released unit (AgentRpc 1.5 `cleanUnit`, issue 18; docs/cleaning.md):
 * finds the enabled driver whose last discovery has the unit's attach handle, runs its clean and
 * verify steps through `runClean` (policy and time limit from the driver's `[<driver>] clean` and
 * `clean_timeout`) and answers with what the custody ledger records: the method, a sha256 of the
 * driver's evidence, and how long it took.
 *
 * Cleans run side by side (a sanitize may take an hour; it must not hold other units or the
 * agent's administration), but one unit is never cleaned twice at once. Each ask names its
 * release (`ticket`): a repeated ask for the release being cleaned joins that clean, and one for
 * the release last cleaned gets the remembered answer without a new clean (a late ask, crossing
 * the answer on the bus, must not clean a unit already back with a tenant); an ask for a newer
 * release waits for a running clean of an older one, then cleans again (a clean that began before
 * a release cannot stand for it). A stopping agent aborts cleans (CLEAN_ABORTED): the conductor
 * keeps the units `cleaning` and asks again.
 */
import { hash } from 'node:crypto'
import type { AcceleratorDriver, CleanRunner, CleanTarget } from '../drivers/driver.js'
import { InvalidInputError, NotFoundError } from '../domain/errors.js'
import { canonicalJson, type DiscoveredDevice } from '../domain/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { CleanUnitRequest, CleanUnitResult } from '../rpc/agent-rpc.js'
import { parseUuid } from './device-ops.js'

export interface UnitCleanDeps {
  /** The enabled driver whose last discovery matched, and the device (DriverAdmin.owner). */
  owner(
    match: (d: DiscoveredDevice) => boolean,
  ): Promise<{ driver: AcceleratorDriver; device: DiscoveredDevice } | undefined>
  /** clean.ts's `runClean` (src/main passes it in). */
  runClean: CleanRunner
  /** Aborted when the agent stops. */
  signal: AbortSignal
  log: Logger
}

const HANDLE_TYPES = new Set(['PCI', 'MDEV', 'TEST_PCI'])

/** The request's handle, checked. @throws InvalidInputError naming the field */
function parseRequest(req: unknown): CleanUnitRequest {
  const r = (req ?? {}) as Partial<CleanUnitRequest>
  const handle = r.handle
  if (
    handle === null ||
    typeof handle !== 'object' ||
    typeof handle.type !== 'string' ||
    !HANDLE_TYPES.has(handle.type) ||
    handle.info === null ||
    typeof handle.info !== 'object' ||
    !Object.values(handle.info).every((v) => typeof v === 'string')
  ) {
    throw new InvalidInputError('handle must be { type: PCI | MDEV | TEST_PCI, info: {…} }', {
      code: 'CLEAN_TARGET_INVALID',
      details: { field: 'handle' },
    })
  }
  const out: CleanUnitRequest = { handle: { type: handle.type, info: { ...handle.info } } }
  if (r.mdevUuid !== undefined) out.mdevUuid = parseUuid(r.mdevUuid, 'mdevUuid')
  if (r.ticket !== undefined) {
    if (typeof r.ticket !== 'string' || r.ticket === '' || r.ticket.length > 255)
      throw new InvalidInputError('ticket must be a non-empty string of at most 255 characters', {
        code: 'CLEAN_TARGET_INVALID',
        details: { field: 'ticket' },
      })
    out.ticket = r.ticket
  }
  return out
}

export function createUnitCleaner(deps: UnitCleanDeps) {
  const { owner, runClean, signal, log } = deps
  /** Per unit: the clean running or last done, and the release it was for. */
  const units = new Map<
    string,
    { ticket: string | undefined; run: Promise<CleanUnitResult>; done: boolean }
  >()

  /** Where each unit was last found: checked by reference first (cheap), rescanned when stale. */
  const located = new Map<string, { driver: AcceleratorDriver; device: DiscoveredDevice }>()
  const locate = async (req: CleanUnitRequest, info: string, key: string) => {
    const known = located.get(key)
    const same = known && (await owner((d) => d === known.device))
    if (same) return same
    const hit = await owner((d) =>
      d.deployables.some((dep) =>
        dep.attachHandles.some((h) => h.type === req.handle.type && canonicalJson(h.info) === info),
      ),
    )
    if (hit) located.set(key, hit)
    else located.delete(key)
    return hit
  }

  const clean = async (
    req: CleanUnitRequest,
    info: string,
    key: string,
  ): Promise<CleanUnitResult> => {
    const hit = await locate(req, info, key)
    if (!hit) {
      throw new NotFoundError(
        `no enabled driver on this host reported the ${req.handle.type} unit ${info}`,
        { code: 'UNIT_NOT_ON_HOST', details: { handle: req.handle } },
      )
    }
    const { driver, device } = hit
    const report = await runClean(
      driver,
      {
        controlPath: device.controlPath,
        handle: req.handle as CleanTarget['handle'],
        ...(req.mdevUuid === undefined ? {} : { mdevUuid: req.mdevUuid }),
        device,
      },
      { signal, log },
    )
    const evidence =
      report.verifyEvidence === undefined
        ? report.evidence
        : `${report.evidence}\n--- verify\n${report.verifyEvidence}`
    log.info(
      { driver: driver.name, handle: req.handle, method: report.method, ms: report.durationMs },
      'unit cleaned',
    )
    return {
      driver: driver.name,
      policy: report.policy,
      method: report.method,
      evidenceSha256: hash('sha256', evidence, 'hex'),
      durationMs: report.durationMs,
    }
  }

  return {
    cleanUnit(raw: unknown): Promise<CleanUnitResult> {
      let req: CleanUnitRequest
      try {
        req = parseRequest(raw)
      } catch (err) {
        return Promise.reject(err as Error)
      }
      const info = canonicalJson(req.handle.info)
      const key = `${req.handle.type} ${info}`
      const last = units.get(key)
      // The same release (or an ask without a ticket while one runs): its clean, running or done.
      if (last && (last.ticket === req.ticket || (!last.done && req.ticket === undefined)))
        return last.run
      const before = last && !last.done ? last.run.catch(() => undefined) : Promise.resolve()
      const entry = {
        ticket: req.ticket,
        run: before.then(() => clean(req, info, key)),
        done: false,
      }
      units.set(key, entry)
      entry.run.then(
        () => (entry.done = true),
        // A failed clean is not remembered: the next ask runs it again.
        () => units.get(key) === entry && units.delete(key),
      )
      return entry.run
    },
  }
}
