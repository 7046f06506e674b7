/**
 * The API's own copy of the agents' device telemetry (issue 16): it subscribes to the fanout topic
 * `cyborg.telemetry` and keeps the latest sample of each device in memory (domain/telemetry-store.ts),
 * for `GET /v1/telemetry`. Nothing is written anywhere: the API still never writes the database.
 * Without a bus (embedded tests) the store stays empty.
 */
import type { FastifyInstance } from 'fastify'
import type { MessageBus } from '../bus/bus.js'
import { createTelemetryStore, type TelemetryStore } from '../domain/telemetry-store.js'
import { readAgentTelemetry, TELEMETRY_TOPIC } from '../rpc/agent-rpc.js'

/** Subscribes (when `bus` is given) until the app closes; returns the store it feeds. */
export async function installTelemetryFeed(
  app: FastifyInstance,
  bus: Pick<MessageBus, 'subscribe'> | undefined,
  now: () => number = Date.now,
): Promise<TelemetryStore> {
  const store = createTelemetryStore()
  if (!bus) return store
  const subscription = await bus.subscribe(TELEMETRY_TOPIC, (message) => {
    const m = readAgentTelemetry(message)
    if (!m) return
    store.put(m.host, m.devices, {
      receivedAt: now(),
      ...(m.periodMs === undefined ? {} : { periodMs: m.periodMs }),
      ...(m.time === undefined ? {} : { time: m.time }),
    })
  })
  app.addHook('onClose', async () => {
    await subscription.unsubscribe()
    store.clear()
  })
  return store
}
