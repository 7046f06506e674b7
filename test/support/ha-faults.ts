/**
 * Issue 30's faults under load, in sequence, shared by test/cluster/faults.cluster.ts and
 * bench/cluster.ts: kill -9 of the Galera node conductor 0 lists first, then `galera.sh start` of it;
 * a graceful stop of the RabbitMQ node conductor 0 lists first, then its start; kill -9 of
 * conductor 1 and a new one in its place. Between two faults the load must make progress again (a
 * hang fails here, naming the fault). Each fault's stall is the longest gap between two answered
 * writes from the fault to the end of its phase.
 */
import type { CycleLoad } from './bind-cycles.js'
import { longestGap } from './bind-cycles.js'
import { rotated, type Clusters, type HaDeployment } from './ha-cluster.js'

export interface FaultStall {
  fault: 'galera node kill' | 'rabbitmq node stop' | 'conductor kill'
  node: string
  /** Longest gap between answered writes from the fault to the end of its phase (ms). */
  stallMs: number
  /** How long the node or process was away (ms), up to its return being confirmed. */
  awayMs: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits until `more` writes more have been answered; throws after `ms`, naming `what`. */
export async function progress(
  load: CycleLoad,
  what: string,
  more = 20,
  ms = 90_000,
): Promise<void> {
  const target = load.writes.length + more
  const end = Date.now() + ms
  while (load.writes.length < target) {
    if (Date.now() > end)
      throw new Error(
        `no progress ${what}: ${JSON.stringify(load.errors)}, ${load.writes.length} writes`,
      )
    await sleep(50)
  }
}

/** Runs the three faults one after the other, with `downMs` of load while each is away. */
export async function runFaults(
  clusters: Clusters,
  deployment: HaDeployment,
  load: CycleLoad,
  downMs = 4000,
  log: (line: string) => void = () => {},
): Promise<FaultStall[]> {
  const stalls: FaultStall[] = []
  const phase = async (
    fault: FaultStall['fault'],
    node: string,
    away: () => Promise<unknown>,
    back: () => Promise<unknown>,
  ) => {
    await progress(load, `before the ${fault}`)
    const t0 = Date.now()
    log(`${fault} (${node})`)
    await away()
    await sleep(downMs)
    await back()
    const awayMs = Date.now() - t0
    await progress(load, `after the ${fault}`)
    await sleep(1000)
    stalls.push({ fault, node, stallMs: longestGap(load.writes, t0, Date.now()), awayMs })
    log(`${fault} over: ${JSON.stringify(stalls.at(-1))}`)
  }
  const galeraNode = rotated(0)[0]!
  await phase(
    'galera node kill',
    `galera node ${galeraNode}`,
    () => clusters.galera('kill', galeraNode),
    () => clusters.galera('start', galeraNode),
  )
  const rabbitNode = rotated(0)[0]!
  await phase(
    'rabbitmq node stop',
    `rabbitmq node ${rabbitNode}`,
    () => clusters.rabbit('stop', rabbitNode),
    () => clusters.rabbit('start', rabbitNode),
  )
  await phase(
    'conductor kill',
    'conductor 1',
    () => deployment.killConductor(1),
    () => deployment.startConductor(1),
  )
  return stalls
}
