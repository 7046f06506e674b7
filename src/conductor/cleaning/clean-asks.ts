/**
 * The conductor's clean asks, batched per host (issue 28; docs/cleaning.md, "Batched asks"). Asks
 * for one host made together (a release's units; or within `windowMs` of the first) go in one
 * `cleanUnits` message (AgentRpc 1.8); a lone ask goes as `cleanUnit` (1.5). Asks are never held behind a message in flight: a
 * clean may take an hour (a sanitize), and a unit's return must not wait for another's clean.
 * For the same reason the agent answers a batch once its first unit is done plus a short grace;
 * a unit still cleaning then is answered CLEAN_RUNNING, and is asked again alone with `cleanUnit`,
 * which joins its running clean.
 *
 * An agent older than 1.8 answers `cleanUnits` with RPC_NO_METHOD: its units are asked again one
 * by one, and the host's asks go one by one at once (no window) for `legacyRecheckMs`; then the
 * next batch tries `cleanUnits` again (the agent may have been upgraded). An agent stand-in
 * without `cleanUnits` is asked one by one too.
 *
 * Each ask resolves with its own unit's result or rejects with its own error (a failed entry of
 * the batch, or the message's error for every unit of it): the caller settles each unit exactly
 * as it would settle a `cleanUnit` answer.
 */
import { AppError } from '../../domain/errors.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc, CleanUnitRequest, CleanUnitResult } from '../../rpc/agent-rpc.js'
import { fromCleanUnitsEntry, MAX_CLEAN_UNITS } from '../../rpc/clean-units.js'

/** The agent methods a clean ask uses; `cleanUnits` is absent from stand-ins of older agents. */
export type CleanAgent = Pick<AgentRpc, 'cleanUnit'> & Partial<Pick<AgentRpc, 'cleanUnits'>>

export interface CleanAsksDeps {
  agentFor: (host: string) => CleanAgent
  log: Logger
  /** Told of every message sent: its method and how many units it carried (metrics, stats). */
  onSent?: (method: 'cleanUnit' | 'cleanUnits', units: number) => void
}

export interface CleanAsksOptions {
  /**
   * How long the first ask for a host waits for company before its batch goes; 0: only the asks
   * made by the same synchronous run (a release's units: one microtask later), which adds no wait
   * for a turn of a busy event loop.
   * @default 0
   */
  windowMs?: number
  /** Units per message; a full batch goes at once. @default 64 */
  maxUnits?: number
  /** How long a host whose agent lacks `cleanUnits` is asked one unit at a time. @default 600000 */
  legacyRecheckMs?: number
}

export interface CleanAsks {
  /** Asks the host's agent to clean one unit, in the host's next batch. */
  ask(host: string, req: CleanUnitRequest): Promise<CleanUnitResult>
}

interface Waiting {
  req: CleanUnitRequest
  resolve(result: CleanUnitResult): void
  reject(err: unknown): void
}

export function createCleanAsks(deps: CleanAsksDeps, options: CleanAsksOptions = {}): CleanAsks {
  const { agentFor, log, onSent } = deps
  const windowMs = Math.max(0, options.windowMs ?? 0)
  const maxUnits = Math.min(MAX_CLEAN_UNITS, Math.max(1, options.maxUnits ?? 64))
  const legacyRecheckMs = options.legacyRecheckMs ?? 600_000
  /** Per host: the asks of its open window. */
  const windows = new Map<string, { waiting: Waiting[]; cancel: () => void }>()
  /** Calls `fn` once the current synchronous run is over (window 0) or after the window. */
  const later = (fn: () => void) => {
    if (windowMs === 0) {
      let live = true
      queueMicrotask(() => live && fn())
      return () => (live = false)
    }
    const t = setTimeout(fn, windowMs)
    return () => clearTimeout(t)
  }
  /** Hosts whose agent answered RPC_NO_METHOD to `cleanUnits`, and when. */
  const legacy = new Map<string, number>()

  const isLegacy = (host: string) => {
    const since = legacy.get(host)
    if (since === undefined) return false
    if (Date.now() - since < legacyRecheckMs) return true
    legacy.delete(host)
    return false
  }

  /** One unit alone, as before 1.8 (or a unit still cleaning when its batch was answered). */
  const askOne = async (agent: CleanAgent, w: Waiting) => {
    onSent?.('cleanUnit', 1)
    try {
      w.resolve(await agent.cleanUnit(w.req))
    } catch (err) {
      w.reject(err)
    }
  }

  const send = async (host: string, batch: Waiting[]): Promise<void> => {
    const agent = agentFor(host)
    if (batch.length === 1 || typeof agent.cleanUnits !== 'function' || isLegacy(host)) {
      await Promise.all(batch.map((w) => askOne(agent, w)))
      return
    }
    onSent?.('cleanUnits', batch.length)
    let answer: Awaited<ReturnType<AgentRpc['cleanUnits']>>
    try {
      answer = await agent.cleanUnits({ units: batch.map((w) => w.req) })
    } catch (err) {
      if (err instanceof AppError && err.code === 'RPC_NO_METHOD') {
        legacy.set(host, Date.now())
        log.info({ host }, 'agent older than agent RPC 1.8: its units are asked one by one')
        await Promise.all(batch.map((w) => askOne(agent, w)))
        return
      }
      for (const w of batch) w.reject(err)
      return
    }
    const again: Waiting[] = []
    batch.forEach((w, i) => {
      const out = fromCleanUnitsEntry(answer?.results?.[i])
      if (!(out instanceof AppError)) w.resolve(out)
      else if (out.code === 'CLEAN_RUNNING') again.push(w)
      else w.reject(out)
    })
    await Promise.all(again.map((w) => askOne(agent, w)))
  }

  const flush = (host: string) => {
    const open = windows.get(host)
    if (!open) return
    windows.delete(host)
    open.cancel()
    void send(host, open.waiting).catch((err: unknown) => {
      for (const w of open.waiting) w.reject(err)
    })
  }

  return {
    ask(host, req) {
      return new Promise<CleanUnitResult>((resolve, reject) => {
        const w = { req, resolve, reject }
        const agent = agentFor(host)
        // No batch to make: one by one at once, as before 1.8.
        if (typeof agent.cleanUnits !== 'function' || isLegacy(host)) return void askOne(agent, w)
        const open = windows.get(host)
        if (open) {
          open.waiting.push(w)
          if (open.waiting.length >= maxUnits) flush(host)
          return
        }
        windows.set(host, { waiting: [w], cancel: later(() => flush(host)) })
      })
    },
  }
}
