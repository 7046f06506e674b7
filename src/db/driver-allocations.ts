/**
 * Read-only: what holds the devices of a driver on some hosts, for the conductor's refusal to
 * uninstall a driver whose devices are in use. A deployable is allocated when an accelerator
 * request in BindStarted or Bound names it or holds one of its attach handles (v2 ARQs and v1
 * attachments alike), or when one of its attach handles is marked in use.
 */
import type { ReadDb } from './core/connection.js'

/** States in which a request holds its deployable. */
const HOLDING_STATES = ['BindStarted', 'Bound']

/** One allocated deployable and what holds it. */
export interface DriverAllocation {
  hostname: string
  /** The deployable's name and uuid. */
  name: string
  uuid: string
  /** The requests that hold it, in id order. */
  requests: { uuid: string; state: string; instanceUuid: string | null; projectId: string | null }[]
  /** Its attach handles marked in use. */
  handlesInUse: number
}

/**
 * The allocated deployables of the drivers named `driverNames` (a driver and its aliases) on
 * `hosts`, in host then name order; empty when nothing is allocated.
 */
export async function listDriverAllocations(
  db: ReadDb,
  driverNames: readonly string[],
  hosts: readonly string[],
): Promise<DriverAllocation[]> {
  if (driverNames.length === 0 || hosts.length === 0) return []
  const deployables = await db
    .selectFrom('deployables as d')
    .innerJoin('devices as v', 'v.id', 'd.device_id')
    .select(['d.id', 'd.uuid', 'd.name', 'v.hostname'])
    .where('d.driver_name', 'in', [...driverNames])
    .where('v.hostname', 'in', [...hosts])
    .orderBy('v.hostname')
    .orderBy('d.name')
    .execute()
  if (deployables.length === 0) return []
  const ids = deployables.map((d) => d.id)
  const handles = await db
    .selectFrom('attach_handles')
    .select(['id', 'deployable_id', 'in_use'])
    .where('deployable_id', 'in', ids)
    .execute()
  const handleOwner = new Map(handles.map((h) => [h.id, h.deployable_id]))
  const requests = await db
    .selectFrom('accelerator_requests')
    .select(['uuid', 'state', 'instance_uuid', 'project_id', 'deployable_id', 'attach_handle_id'])
    .where('state', 'in', HOLDING_STATES)
    .where((eb) => {
      const named = eb('deployable_id', 'in', ids)
      return handles.length === 0
        ? named
        : eb.or([
            named,
            eb(
              'attach_handle_id',
              'in',
              handles.map((h) => h.id),
            ),
          ])
    })
    .orderBy('id')
    .execute()
  const out: DriverAllocation[] = []
  for (const d of deployables) {
    const held = requests.filter(
      (r) =>
        r.deployable_id === d.id ||
        (r.attach_handle_id !== null && handleOwner.get(r.attach_handle_id) === d.id),
    )
    const handlesInUse = handles.filter(
      (h) => h.deployable_id === d.id && Number(h.in_use) === 1,
    ).length
    if (held.length === 0 && handlesInUse === 0) continue
    out.push({
      hostname: d.hostname,
      name: d.name,
      uuid: d.uuid,
      requests: held.map((r) => ({
        uuid: r.uuid,
        state: r.state,
        instanceUuid: r.instance_uuid,
        projectId: r.project_id,
      })),
      handlesInUse,
    })
  }
  return out
}
