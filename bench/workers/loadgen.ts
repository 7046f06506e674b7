/**
 * The load generator of bench/api-workers.ts, in a process of its own so that its CPU is not the
 * server's: autocannon on one URL, then one JSON line on stdout with the figures, its own CPU time
 * and its event-loop lag. Usage: node --import tsx bench/workers/loadgen.ts URL CONNECTIONS SECONDS
 */
import autocannon from 'autocannon'
import { eventLoopLag } from '../support/load.js'

const [url, connections, duration] = process.argv.slice(2) as [string, string, string]
const cpu = process.cpuUsage()
const lag = eventLoopLag()
const r = await autocannon({ url, connections: Number(connections), duration: Number(duration) })
const used = process.cpuUsage(cpu)
process.stdout.write(
  `${JSON.stringify({
    requests: r.requests.total,
    requestsPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    cpuSeconds: (used.user + used.system) / 1e6,
    eventLoopLag: lag(),
  })}\n`,
)
