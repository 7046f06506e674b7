/**
 * The sweep of reconfiguration fences left behind (docs/fpga.md): a program or configure whose
 * conductor crashed, or whose agent never answered, leaves its units out of service. Once a fence
 * is older than `[conductor] reconfigure_timeout`, any conductor's sweep asks the host's agent to
 * discover again. Only when it answers (the database and Placement then hold what the card really
 * has) is the fence lifted; a program's image is forgotten, since the card may hold part of one.
 * While the agent stays silent the units stay fenced: a card is never offered on a guess.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { clearBitstreams, liftReconfigFence, listStaleFences } from '../../db/reconfig-fence.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import { AppError, TimeoutError } from '../../domain/errors.js'

/**
 * Whether an ask got no answer (a timeout, the bus lost or closed): the agent may or may not have
 * acted. An UnavailableError the agent itself raised (Glance or Barbican down, no image store)
 * came before it touched the card, and is an answer.
 */
export function isNoAnswer(err: unknown): boolean {
  if (err instanceof TimeoutError) return true
  return err instanceof AppError && (err.code.startsWith('BUS_') || err.code === 'ABORTED')
}

export interface ReconfigSweepOptions {
  /** `[conductor] reconfigure_timeout` in ms: how long one program or configure may run. @default 2400000 */
  timeoutMs?: number
  /** How often the sweep runs; 0 for never. @default half the timeout, at most 60000 */
  sweepIntervalMs?: number
}

export interface ReconfigSweepDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  agentFor: (host: string) => Pick<AgentRpc, 'discover'>
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  /** Now, and now less the timeout, as stored timestamps. */
  now: () => string
  staleBefore: () => string
}

export function createReconfigSweep(deps: ReconfigSweepDeps, options: ReconfigSweepOptions = {}) {
  const log = deps.log.child({ component: 'reconfig-sweep' })
  const intervalMs =
    options.sweepIntervalMs ?? Math.min(60_000, (options.timeoutMs ?? 2_400_000) / 2)
  let timer: NodeJS.Timeout | undefined
  let running: Promise<number> | undefined

  const once = async (): Promise<number> => {
    let lifted = 0
    for (const fence of await listStaleFences(deps.db.db, deps.staleBefore())) {
      await nextTurn()
      try {
        await deps.agentFor(fence.hostname).discover({})
      } catch (err) {
        log.warn({ ...fence, err }, 'units stay out of service: the agent has not rediscovered yet')
        continue
      }
      await deps.committer.run(async (trx) => {
        const at = deps.now()
        if (fence.kind === 'program') await clearBitstreams(trx, fence.deployableIds, at)
        await liftReconfigFence(trx, fence.operationUuid, at)
      })
      await deps.syncPlacement(fence.hostname)
      log.warn({ ...fence }, 'rediscovered after an unfinished reconfiguration; units back')
      lifted++
    }
    return lifted
  }

  return {
    /** One pass; resolves with how many fences were lifted. Passes never overlap. */
    sweep(): Promise<number> {
      running ??= once().finally(() => (running = undefined))
      return running
    },
    start() {
      if (intervalMs <= 0) return
      timer = setInterval(() => {
        void this.sweep().catch((err: unknown) => log.warn({ err }, 'reconfig sweep failed'))
      }, intervalMs)
      timer.unref()
    },
    async stop() {
      clearInterval(timer)
      await running?.catch(() => undefined)
    },
  }
}
