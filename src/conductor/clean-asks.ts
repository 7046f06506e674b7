/**
 * The conductor's clean asks, batched per host (issue 28; docs/cleaning.md, "Batched asks"). Asks
 * for one host that arrive within `windowMs`, or while the host already has `maxInFlight` asks in
 * flight, go in one `cleanUnits` message (AgentRpc 1.8); a lone ask goes as `cleanUnit` (1.5). An
 * agent older than 1.8 answers `cleanUnits` with RPC_NO_METHOD: its units are asked again one by
 * one with `cleanUnit`, and the host gets `cleanUnit` only for `legacyRecheckMs`, after which the
 * next batch tries `cleanUnits` again (the agent may have been upgraded).
 *
 * Each ask resolves with its own unit's result or rejects with its own error (a failed entry of
 * the batch, or the message's error for every unit of it): the caller settles each unit exactly
 * as it would settle a `cleanUnit` answer.
 */
import { AppError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { AgentRpc, CleanUnitRequest, CleanUnitResult } from '../rpc/agent-rpc.js'
import { fromCleanUnitsEntry, MAX_CLEAN_UNITS } from '../rpc/clean-units.js'

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
   * How long the first ask for an idle host waits for company; 0 for the current tick only.
   * @default 2
   */
  windowMs?: number
  /** Messages in flight per host; asks arriving while that many are out form the next batch. @default 2 */
  maxInFlight?: number
  /** Units per message. @default 64 */
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

interface HostQueue {
  waiting: Waiting[]
  inFlight: number
  timer: NodeJS.Timeout | undefined
}

export function createCleanAsks(deps: CleanAsksDeps, options: CleanAsksOptions = {}): CleanAsks {
  const { agentFor, log, onSent } = deps
  const windowMs = Math.max(0, options.windowMs ?? 2)
  const maxInFlight = Math.max(1, options.maxInFlight ?? 2)
  const maxUnits = Math.min(MAX_CLEAN_UNITS, Math.max(1, options.maxUnits ?? 64))
  const legacyRecheckMs = options.legacyRecheckMs ?? 600_000
  const hosts = new Map<string, HostQueue>()
  /** Hosts whose agent answered RPC_NO_METHOD to `cleanUnits`, and when. */
  const legacy = new Map<string, number>()

  const isLegacy = (host: string) => {
    const since = legacy.get(host)
    if (since === undefined) return false
    if (Date.now() - since < legacyRecheckMs) return true
    legacy.delete(host)
    return false
  }

  /** Each unit alone, as before 1.8. */
  const oneByOne = async (agent: CleanAgent, batch: readonly Waiting[]): Promise<void> =>
    void (await Promise.all(
      batch.map(async (w) => {
        onSent?.('cleanUnit', 1)
        try {
          w.resolve(await agent.cleanUnit(w.req))
        } catch (err) {
          w.reject(err)
        }
      }),
    ))

  const send = async (host: string, batch: Waiting[]): Promise<void> => {
    const agent = agentFor(host)
    if (batch.length === 1 || typeof agent.cleanUnits !== 'function' || isLegacy(host))
      return oneByOne(agent, batch)
    onSent?.('cleanUnits', batch.length)
    let answer: Awaited<ReturnType<AgentRpc['cleanUnits']>>
    try {
      answer = await agent.cleanUnits({ units: batch.map((w) => w.req) })
    } catch (err) {
      if (err instanceof AppError && err.code === 'RPC_NO_METHOD') {
        legacy.set(host, Date.now())
        log.info({ host }, 'agent older than agent RPC 1.8: its units are asked one by one')
        return oneByOne(agent, batch)
      }
      for (const w of batch) w.reject(err)
      return undefined
    }
    batch.forEach((w, i) => {
      const out = fromCleanUnitsEntry(answer?.results?.[i])
      if (out instanceof AppError) w.reject(out)
      else w.resolve(out)
    })
  }

  /** Sends what waits for `host`, as long as it has a free slot. */
  const flush = (host: string, q: HostQueue) => {
    clearTimeout(q.timer)
    q.timer = undefined
    while (q.inFlight < maxInFlight && q.waiting.length > 0) {
      const batch = q.waiting.splice(0, maxUnits)
      q.inFlight++
      void send(host, batch)
        .catch((err: unknown) => {
          for (const w of batch) w.reject(err)
        })
        .finally(() => {
          q.inFlight--
          // Asks that arrived meanwhile have waited long enough: they go at once.
          if (q.waiting.length > 0) flush(host, q)
          else if (q.inFlight === 0 && q.timer === undefined) hosts.delete(host)
        })
    }
  }

  return {
    ask(host, req) {
      let q = hosts.get(host)
      if (!q) hosts.set(host, (q = { waiting: [], inFlight: 0, timer: undefined }))
      const queue = q
      return new Promise<CleanUnitResult>((resolve, reject) => {
        queue.waiting.push({ req, resolve, reject })
        if (queue.waiting.length >= maxUnits) return flush(host, queue)
        // Busy: the ask waits for a free slot (a send's end flushes). Idle: a short window.
        if (queue.inFlight >= maxInFlight || queue.timer !== undefined) return
        queue.timer = setTimeout(() => flush(host, queue), windowMs)
      })
    },
  }
}
