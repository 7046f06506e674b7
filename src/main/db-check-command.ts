/**
 * `cyborg db check`'s checks: the database's own (src/db/db-check.ts), then, when `[placement]`
 * is configured, Placement drift: every deployable with a provider is compared with what the
 * conductor's sync would write (existence, inventory total and reserved, traits).
 */
import type { Config } from '../config/config.js'
import type { DatabaseHandle } from '../db/connection.js'
import { checkDatabase, type Finding } from '../db/db-check.js'
import { listPlacementRows } from '../db/placement-rows.js'
import { desiredStateOf } from '../conductor/placement-plan.js'
import type { PlacementClient } from '../openstack/placement.js'
import { placementOptions } from './resources.js'

export async function runDbCheck(handle: DatabaseHandle, config: Config): Promise<Finding[]> {
  const findings = await checkDatabase(handle.db)
  const placement = placementOptions(config)
  if (placement) findings.push(...(await placementDrift(handle, placement.client)))
  return findings
}

export async function placementDrift(
  handle: DatabaseHandle,
  placement: PlacementClient,
): Promise<Finding[]> {
  const hosts = await handle.db.selectFrom('devices').select('hostname').distinct().execute()
  const findings: Finding[] = []
  const drift = (message: string) => findings.push({ kind: 'placement_drift', message })
  for (const { hostname } of hosts) {
    for (const row of await listPlacementRows(handle.db, hostname)) {
      if (row.rpUuid === null || row.removalPending) continue
      const desired = desiredStateOf(row, row.rpUuid)
      if ('problem' in desired) continue
      const want = desired.state
      const view = await placement.getProviderView(row.rpUuid)
      if (view === null) {
        drift(`deployable ${row.name}: Placement has no provider ${row.rpUuid}`)
        continue
      }
      const inv = view.inventories[want.resourceClass]
      if (!inv)
        drift(
          `deployable ${row.name}: provider ${row.rpUuid} has no ${want.resourceClass} inventory`,
        )
      else if (inv.total !== want.total || inv.reserved !== want.reserved)
        drift(
          `deployable ${row.name}: provider ${row.rpUuid} holds ${want.resourceClass} total ${inv.total} reserved ${inv.reserved}, the database says total ${want.total} reserved ${want.reserved}`,
        )
      const have = [...view.traits].sort()
      if (have.join(',') !== want.traits.join(','))
        drift(
          `deployable ${row.name}: provider ${row.rpUuid} has traits ${have.join(', ')}, the database says ${want.traits.join(', ')}`,
        )
    }
  }
  return findings
}
