/**
 * The heartbeat of the API and conductor processes: the conductor's `heartbeat` RPC every
 * `[agent] report_interval` (the agents' beat), so that `cyborg status` sees every process in the
 * services table, down after `[DEFAULT] service_down_time` as in Nova. The first beat goes out at once; a failed beat is logged and retried next period.
 */
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type { Logger } from '../domain/logger.js'

/** The binary names the API and conductor heartbeat under (agents use `cyborg-agent`). */
export const API_BINARY = 'cyborg-api'
/** The API's /healthcheck reads the conductors' beats under this name (src/db/reads/ping.ts). */
export { CONDUCTOR_BINARY } from '../db/reads/ping.js'

export interface HeartbeatOptions {
  conductor: Pick<ConductorRpc, 'heartbeat'>
  host: string
  binary: string
  version: string
  intervalMs: number
  log: Logger
}

/**
 * Starts beating; the returned function stops it. A beat in flight is not waited for (a conductor
 * that is gone would hold the shutdown for a whole RPC timeout); its failure is then not logged.
 */
export function startHeartbeat(options: HeartbeatOptions): () => Promise<void> {
  const { conductor, host, binary, version, intervalMs, log } = options
  let stopped = false
  const beat = () => {
    conductor.heartbeat({ host, binary, version }).catch((err: unknown) => {
      if (!stopped) log.warn({ err, binary }, 'heartbeat failed; retrying next period')
    })
  }
  beat()
  const timer = setInterval(beat, intervalMs)
  timer.unref()
  return async () => {
    stopped = true
    clearInterval(timer)
  }
}
