/**
 * RPC round trips through the MessageBus: the in-process bus against RabbitMQ (a fresh vhost on the
 * local broker), sequential and with 50 calls in flight. Prints one JSON document.
 * Usage: node --import tsx bench/bus-rpc.ts [--calls 5000]
 */
import { parseArgs } from 'node:util'
import { cpus } from 'node:os'
import type { MessageBus } from '../src/bus/bus.js'
import { createInProcessBus } from '../src/bus/in-process-bus.js'
import { createRabbitMqBus } from '../src/bus/rabbitmq-bus.js'
import { testBroker } from '../test/support/peers/rabbitmq.js'
import { eventLoopLag } from './support/load.js'

const { values } = parseArgs({ options: { calls: { type: 'string', default: '5000' } } })
const calls = Number(values.calls)

async function rate(
  bus: MessageBus,
  inFlight: number,
): Promise<{ callsPerSec: number; meanMs: number }> {
  let next = 0
  const started = process.hrtime.bigint()
  const worker = async () => {
    while (next < calls) {
      next++
      await bus.call('bench.rpc', 'echo', { n: next })
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  return {
    callsPerSec: Math.round(calls / seconds),
    meanMs: Math.round(((seconds * 1000) / calls) * inFlight * 1000) / 1000,
  }
}

async function measure(server: MessageBus, client: MessageBus) {
  const sub = await server.serve('bench.rpc', async (_method, payload) => payload)
  try {
    await rate(client, 1) // warm-up
    return { sequential: await rate(client, 1), inFlight50: await rate(client, 50) }
  } finally {
    await sub.unsubscribe()
  }
}

const results: Record<string, unknown> = {}
const lag = eventLoopLag()
const inProcess = createInProcessBus()
results.inProcess = await measure(inProcess, inProcess)
await inProcess.close()

const broker = await testBroker()
if (broker.skip) {
  results.rabbitmq = { skipped: broker.skip }
} else {
  const vhost = await broker.createVhost()
  const server = await createRabbitMqBus({ url: vhost.url })
  const client = await createRabbitMqBus({ url: vhost.url })
  try {
    results.rabbitmq = await measure(server, client)
  } finally {
    await client.close()
    await server.close()
    await vhost.drop()
  }
}
process.stdout.write(
  JSON.stringify(
    {
      benchmark: 'bus-rpc',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version },
      settings: { calls },
      results,
      eventLoopLag: {
        benchmarkProcess: lag(),
        services: 'both ends of every call run in the benchmark process',
      },
    },
    null,
    2,
  ) + '\n',
)
