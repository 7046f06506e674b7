/**
 * The lease sweep's fence (src/conductor/lease-sweep.ts), for many silent agents in one
 * transaction: lock their hosts' offered devices (health ok or degraded), set them `unknown` with
 * each agent's reason in one UPDATE per host that re-checks the lease in the same statement (a
 * heartbeat that landed meanwhile wins), and record each device's transition, with the events:
 * `accelerator.agent.lease_lost` per host fenced, then `accelerator.device.health_changed` per device.
 */
import type { Kysely } from 'kysely'
import { dialectOf } from './core/connection.js'
import type { Database } from './core/schema.js'
import { AGENT_BINARY, deleteReportHashes } from './service-rows.js'
import { insertHealthTransitions, type HealthTransition } from './health-transitions.js'
import { agentEvent, deviceHealthEvent, type NewEvent } from '../domain/events.js'
import { deviceFacts } from './outbox/device-events.js'
import { insertEvents } from './outbox/events.js'

/** Hosts per statement's IN list. */
const CHUNK = 500

/**
 * Fences the offered devices of `agents` whose lease ran out before `cutoff`; returns the
 * transitions recorded (none for a host whose agent beat meanwhile or whose devices another
 * conductor fenced first).
 */
export async function fenceDevicesOfSilentAgents(
  db: Kysely<Database>,
  agents: readonly { host: string; reason: string }[],
  options: { cutoff: string; now: string },
): Promise<HealthTransition[]> {
  const { cutoff, now } = options
  const transitions: HealthTransition[] = []
  const events: NewEvent[] = []
  const reasons = new Map(agents.map((a) => [a.host, a.reason]))
  for (let i = 0; i < agents.length; i += CHUNK) {
    const hosts = agents.slice(i, i + CHUNK).map((a) => a.host)
    const qb = db
      .selectFrom('devices as d')
      .selectAll('d')
      .where('d.hostname', 'in', hosts)
      .where('d.health', 'in', ['ok', 'degraded'])
      .orderBy('d.id')
    const rows = await (dialectOf(db) === 'sqlite' ? qb : qb.forUpdate()).execute()
    const byHost = new Map<string, typeof rows>()
    for (const r of rows) byHost.set(r.hostname, [...(byHost.get(r.hostname) ?? []), r])
    for (const [host, devices] of byHost) {
      const reason = reasons.get(host)!
      const res = await db
        .updateTable('devices')
        .set({
          health: 'unknown',
          health_reason: reason,
          health_updated_at: now,
          healthy_reports: 0,
          updated_at: now,
        })
        .where(
          'id',
          'in',
          devices.map((d) => d.id),
        )
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('services')
              .select('services.id')
              .where('services.host', '=', host)
              .where('services.binary', '=', AGENT_BINARY)
              .where('services.last_seen', '<', cutoff),
          ),
        )
        .executeTakeFirst()
      if (Number(res.numUpdatedRows) === 0) continue // the agent beat meanwhile
      const lost = {
        hostname: host,
        binary: AGENT_BINARY,
        reason,
        devices: devices.map((d) => d.uuid),
      }
      events.push(agentEvent('lease_lost', lost, now))
      for (const d of devices) {
        transitions.push({
          deviceUuid: d.uuid,
          hostname: host,
          from: d.health,
          to: 'unknown',
          reason,
          createdAt: now,
        })
        const fenced = { ...deviceFacts(d), health: 'unknown', healthReason: reason }
        events.push(deviceHealthEvent(fenced, d.health, now))
      }
    }
  }
  const fenced = [...new Set(transitions.map((t) => t.hostname))]
  if (fenced.length > 0) await deleteReportHashes(db, fenced)
  await insertHealthTransitions(db, transitions)
  await insertEvents(db, events)
  return transitions
}
