/**
 * Where an ARQ may be bound: the deployable behind a Placement provider (Nova's path), or the
 * offered deployables of a host that satisfy a request group (standalone), and what an instance's
 * requests hold. Read-only: every write of a bind lives with its table (arqs.ts, attach-handles.ts,
 * arq-instances.ts, deployables.ts).
 */
import type { ReadDb } from './core/connection.js'
import { precompile } from './core/precompiled.js'
import { isOffered } from '../domain/inventory/inventory.js'
import { isFencedHealth } from '../domain/health/report.js'
import { AGENT_BINARY } from './service-rows.js'

export interface BindTarget {
  deployableId: number
  rpUuid: string | null
  /** The device's control path (canonical JSON of its PCI address): what FPGA programming targets. */
  controlPath: string
  /** The image the FPGA was last programmed with, if any. */
  bitstreamId: string | null
  name: string
  hostname: string
  /** Active, enabled, healthy and not pending removal. */
  offered: boolean
  /** The last beat of the host's agent (the lease), or null when no agent ever beat. */
  agentLastSeen: string | null
  /** Why the device is fenced by its health (`failed` or `unknown` and the reason), else null. */
  fence: string | null
  /** What the rules of src/domain/explain.ts read besides (a bind names the rule that failed). */
  lifecycle: string
  lifecycleReason: string | null
  status: string
  health: string
  healthReason: string | null
  removalPending: boolean
  attributes: { key: string; value: string }[]
}

const base = (db: ReadDb) =>
  db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('services as s', (j) =>
      j.onRef('s.host', '=', 'd.hostname').on('s.binary', '=', AGENT_BINARY),
    )
    .select([
      's.last_seen as agent_last_seen',
      'p.id',
      'p.name',
      'p.rp_uuid',
      'p.bitstream_id',
      'p.removal_pending',
      'd.cpid_info',
      'd.hostname',
      'd.lifecycle',
      'd.lifecycle_reason',
      'd.status',
      'd.health',
      'd.health_reason',
    ])

type Row = {
  id: number
  name: string
  rp_uuid: string | null
  bitstream_id: string | null
  cpid_info: string
  removal_pending: number
  hostname: string
  lifecycle: string
  lifecycle_reason: string | null
  status: string
  health: string
  health_reason: string | null
  agent_last_seen: string | null
}

async function withAttributes(db: ReadDb, rows: Row[]): Promise<BindTarget[]> {
  if (rows.length === 0) return []
  const attrs = await db
    .selectFrom('attributes')
    .select(['deployable_id', 'key', 'value'])
    .where(
      'deployable_id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('id')
    .execute()
  return rows.map((r) =>
    toTarget(
      r,
      attrs.filter((a) => a.deployable_id === r.id).map(({ key, value }) => ({ key, value })),
    ),
  )
}

function toTarget(r: Row, attributes: BindTarget['attributes']): BindTarget {
  return {
    deployableId: r.id,
    rpUuid: r.rp_uuid,
    controlPath: r.cpid_info,
    bitstreamId: r.bitstream_id,
    name: r.name,
    hostname: r.hostname,
    offered: isOffered({
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      removalPending: Number(r.removal_pending) === 1,
    }),
    agentLastSeen: r.agent_last_seen,
    fence: !isFencedHealth(r.health)
      ? null
      : `health ${r.health}${r.health_reason ? `: ${r.health_reason}` : ''}`,
    lifecycle: r.lifecycle,
    lifecycleReason: r.lifecycle_reason,
    status: r.status,
    health: r.health,
    healthReason: r.health_reason,
    removalPending: Number(r.removal_pending) === 1,
    attributes,
  }
}

// One statement (issue 28: the bind's read of its target): the row once per attribute. Precompiled:
// every Nova bind runs it (see precompiled.ts).
const byProvider = precompile((db: ReadDb, rpUuid: string) =>
  base(db)
    .leftJoin('attributes as a', 'a.deployable_id', 'p.id')
    .select(['a.key as attr_key', 'a.value as attr_value'])
    .where('p.rp_uuid', '=', rpUuid)
    .orderBy('a.id'),
)

/** The deployable whose resource provider is `rpUuid`, or undefined. */
export async function getTargetByProvider(
  db: ReadDb,
  rpUuid: string,
): Promise<BindTarget | undefined> {
  const rows = await byProvider(db, rpUuid)
  const first = rows[0]
  if (!first) return undefined
  const attributes = rows.flatMap((r) =>
    r.id !== first.id || r.attr_key === null || r.attr_value === null
      ? []
      : [{ key: r.attr_key, value: r.attr_value }],
  )
  return toTarget(first, attributes)
}

/** The deployable with id `id`, or undefined. */
export async function getTargetById(db: ReadDb, id: number): Promise<BindTarget | undefined> {
  return (await withAttributes(db, await base(db).where('p.id', '=', id).execute()))[0]
}

/** Every deployable of `host`, in id order (the caller filters by resource class and traits). */
export async function listTargetsOnHost(db: ReadDb, host: string): Promise<BindTarget[]> {
  return withAttributes(db, await base(db).where('d.hostname', '=', host).orderBy('p.id').execute())
}

/**
 * For each of `rps` that is a deployable's resource provider: how many of `instance`'s requests
 * hold that deployable (a claimed handle, whatever the state). Other providers are left out.
 */
export async function getHeldCountsByInstance(
  db: ReadDb,
  instance: string,
  rps: string[],
): Promise<Map<string, number>> {
  if (rps.length === 0) return new Map()
  const rows = await db
    .selectFrom('deployables as d')
    .leftJoin('accelerator_requests as a', (j) =>
      j.onRef('a.deployable_id', '=', 'd.id').on('a.instance_uuid', '=', instance),
    )
    .select(['d.rp_uuid', (eb) => eb.fn.count<string | number>('a.id').as('held')])
    .where('d.rp_uuid', 'in', rps)
    .groupBy('d.rp_uuid')
    .execute()
  return new Map(rows.map((r) => [r.rp_uuid!, Number(r.held)]))
}
