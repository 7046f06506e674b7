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
 *
 * `abortClean` (AgentRpc 1.7, issue 27) is an operator's force-in-service: it stops every clean of
 * the unit, waits until the driver's own step has ended (not only until `runClean` gave up on it),
 * and only then answers; the conductor puts the unit back in service after that answer. The
 * release it names is remembered as aborted: an ask for it that arrives later (crossing the abort
 * on the bus) is refused with CLEAN_ABORTED instead of cleaning a unit that may be a tenant's by
 * then. An ask for a newer release cleans as usual.
 *
 * `cleanUnits` (AgentRpc 1.8, issue 28) is many `cleanUnit` asks in one message: each unit goes
 * through `cleanUnit` (same joins, memory and aborts), and the answer has one entry per unit once
 * all have ended; a unit's failure is its entry, not the message's (clean-batch.ts).
 */
import { hash } from 'node:crypto'
import type { AcceleratorDriver, CleanRunner, CleanTarget } from '../drivers/driver.js'
import {
  DriverError,
  InvalidInputError,
  NotFoundError,
  UnavailableError,
} from '../domain/errors.js'
import { canonicalJson, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import type {
  AbortCleanResult,
  CleanUnitRequest,
  CleanUnitResult,
  CleanUnitsResult,
} from '../rpc/agent-rpc.js'
import { cleanBatch } from './clean-batch.js'
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
  /** How long `abortClean` waits for a driver step to end before it answers CLEAN_STILL_RUNNING. @default 10000 */
  abortWaitMs?: number
  /**
   * How long `cleanUnits` waits for the rest once one unit's clean is over, at least (half the
   * first clean's time if longer); CLEAN_RUNNING after. @default 20
   */
  batchGraceMs?: number
}

/** One clean of a unit while it runs: its own abort, and the driver step once it started. */
interface CleanJob {
  controller: AbortController
  /** Settles once the clean's answer is in and the driver's step (if it started) has ended. */
  ended: Promise<void>
}

const noop = () => undefined

/** Aborted releases remembered per unit. */
const ABORTED_KEPT = 8

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

/** A clean's own abort signal, and where it hands over the driver step once that started. */
interface CleanStep {
  signal: AbortSignal
  onStep: (step: Promise<unknown>) => void
}

/**
 * Cleans the unit `hit` found (the driver's clean and verify through `runClean`) and answers what
 * the custody ledger records. @throws NotFoundError UNIT_NOT_ON_HOST when no enabled driver has it
 */
async function cleanFound(
  deps: Pick<UnitCleanDeps, 'runClean' | 'log'>,
  hit: { driver: AcceleratorDriver; device: DiscoveredDevice } | undefined,
  req: CleanUnitRequest,
  info: string,
  job: CleanStep,
): Promise<CleanUnitResult> {
  if (!hit) {
    throw new NotFoundError(
      `no enabled driver on this host reported the ${req.handle.type} unit ${info}`,
      { code: 'UNIT_NOT_ON_HOST', details: { handle: req.handle } },
    )
  }
  const { driver, device } = hit
  const report = await deps.runClean(
    driver,
    {
      controlPath: device.controlPath,
      handle: req.handle as CleanTarget['handle'],
      ...(req.mdevUuid === undefined ? {} : { mdevUuid: req.mdevUuid }),
      device,
    },
    { signal: job.signal, log: deps.log, onStep: job.onStep },
  )
  const evidence =
    report.verifyEvidence === undefined
      ? report.evidence
      : `${report.evidence}\n--- verify\n${report.verifyEvidence}`
  deps.log.info(
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

export function createUnitCleaner(deps: UnitCleanDeps) {
  const { owner, runClean, signal, log, abortWaitMs = 10_000, batchGraceMs = 20 } = deps
  /** Per unit: the clean running or last done, and the release it was for. */
  const units = new Map<
    string,
    { ticket: string | undefined; run: Promise<CleanUnitResult>; done: boolean }
  >()
  /** Per unit: the cleans whose driver step may still run (an ignored abort or time-out included). */
  const jobs = new Map<string, Set<CleanJob>>()
  /** Per unit: the last releases whose clean an operator aborted (`abortClean`), oldest first. */
  const aborted = new Map<string, (string | undefined)[]>()

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
    job: CleanStep,
  ): Promise<CleanUnitResult> =>
    cleanFound({ runClean, log }, await locate(req, info, key), req, info, job)

  const cleaner = {
    cleanUnit(raw: unknown): Promise<CleanUnitResult> {
      let req: CleanUnitRequest
      try {
        req = parseRequest(raw)
      } catch (err) {
        return Promise.reject(err as Error)
      }
      const info = canonicalJson(req.handle.info)
      const key = `${req.handle.type} ${info}`
      if (aborted.get(key)?.includes(req.ticket))
        return Promise.reject(
          new DriverError('the clean of this release was aborted (force-in-service)', {
            code: 'CLEAN_ABORTED',
            details: { ticket: req.ticket ?? null },
          }),
        )
      const last = units.get(key)
      // The same release (or an ask without a ticket while one runs): its clean, running or done.
      if (last && (last.ticket === req.ticket || (!last.done && req.ticket === undefined)))
        return last.run
      const before = last && !last.done ? last.run.catch(noop) : Promise.resolve()
      const controller = new AbortController()
      let step: Promise<unknown> | undefined
      const run = before.then(() =>
        clean(req, info, key, {
          signal: AbortSignal.any([signal, controller.signal]),
          onStep: (s) => {
            step = s
          },
        }),
      )
      const job: CleanJob = {
        controller,
        ended: run.then(noop, noop).then(() => step?.then(noop, noop)),
      }
      const running = jobs.get(key) ?? new Set<CleanJob>()
      jobs.set(key, running.add(job))
      void job.ended.then(() => {
        running.delete(job)
        if (running.size === 0 && jobs.get(key) === running) jobs.delete(key)
      })
      const entry = { ticket: req.ticket, run, done: false }
      units.set(key, entry)
      entry.run.then(
        () => (entry.done = true),
        // A failed clean is not remembered: the next ask runs it again.
        () => units.get(key) === entry && units.delete(key),
      )
      return entry.run
    },

    /**
     * Stops every clean of the unit and answers once none runs: `aborted` true when one did.
     * @throws UnavailableError CLEAN_STILL_RUNNING when a driver step has not ended within
     *   `abortWaitMs` (the unit must stay out of service); InvalidInputError naming the field
     */
    async abortClean(raw: unknown): Promise<AbortCleanResult> {
      const req = parseRequest(raw)
      const info = canonicalJson(req.handle.info)
      const key = `${req.handle.type} ${info}`
      // A few per unit: an ask of an aborted release may still be on the bus after later ones.
      aborted.set(key, [...(aborted.get(key) ?? []), req.ticket].slice(-ABORTED_KEPT))
      const running = [...(jobs.get(key) ?? [])]
      if (running.length === 0) return { aborted: false }
      for (const job of running) job.controller.abort(new Error('aborted: force-in-service'))
      let timer: NodeJS.Timeout | undefined
      const ended = await Promise.race([
        Promise.all(running.map((j) => j.ended)).then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), abortWaitMs))),
      ])
      clearTimeout(timer)
      if (!ended)
        throw new UnavailableError(
          `the clean of ${req.handle.type} unit ${info} did not stop within ${abortWaitMs} ms ` +
            '(its driver step still runs); the unit stays out of service: try again once it has ended',
          { code: 'CLEAN_STILL_RUNNING', details: { handle: req.handle } },
        )
      log.warn({ handle: req.handle, ticket: req.ticket }, 'clean aborted (force-in-service)')
      return { aborted: true }
    },

    /**
     * Cleans each unit as `cleanUnit` does, side by side (clean-batch.ts).
     * @throws InvalidInputError (field `units`) when `units` is not a list of 1 to MAX_CLEAN_UNITS
     */
    cleanUnits: (raw: unknown): Promise<CleanUnitsResult> =>
      cleanBatch({ cleanUnit: (unit) => cleaner.cleanUnit(unit), batchGraceMs }, raw),
  }
  return cleaner
}
