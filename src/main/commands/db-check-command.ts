/**
 * `cyborg db check`'s checks (docs/operations.md): the database's own
 * (src/db/core/db-check.ts) on a schema at the current revision, then, when `[placement]` is configured,
 * Placement drift: every deployable's provider is compared with what the conductor's sync would
 * write (src/conductor/placement/placement-plan.ts `desiredStateOf`): it exists, its inventory's total and
 * reserved, its traits. Placement is only read.
 */
import type { Config } from '../../config/config.js'
import type { DatabaseHandle } from '../../db/core/connection.js'
import { checkDatabase, listDeviceHosts, type Finding } from '../../db/core/db-check.js'
import { listPlacementRows, type PlacementRow } from '../../db/placement-rows.js'
import { desiredStateOf } from '../../conductor/placement/placement-plan.js'
import type { PlacementClient } from '../../openstack/placement.js'
import { errorMessage } from '../../domain/error-message.js'
import { placementOptions } from '../resources.js'
import { requireCurrentSchema } from '../database.js'

/** Every finding of the database, then of Placement when `[placement]` is configured. */
export async function runDbCheck(
  handle: DatabaseHandle,
  config: Config,
): Promise<{ findings: Finding[]; placementChecked: boolean }> {
  await requireCurrentSchema(handle, 'db check')
  const findings = await checkDatabase(handle.db)
  const placement = placementOptions(config)
  if (placement) findings.push(...(await placementDrift(handle, placement.client)))
  return { findings, placementChecked: placement !== undefined }
}

/** How the provider of `row` differs from what the sync would write: one message each. */
async function driftOf(row: PlacementRow, placement: PlacementClient): Promise<string[]> {
  if (row.rpUuid === null) return []
  // Pending removal and held by nothing: the sync deletes its provider, so there is nothing to compare.
  if (row.removalPending && !row.held) return []
  const desired = desiredStateOf(row, row.rpUuid)
  // No valid resource class or no accelerators: the sync writes nothing either (it logs why).
  if ('problem' in desired) return []
  const want = desired.state
  const of = `deployable ${row.name}: provider ${row.rpUuid}`
  const view = await placement.getProviderView(row.rpUuid)
  if (view === null) return [`${of} is not in Placement`]
  const out: string[] = []
  const inv = view.inventories[want.resourceClass]
  if (!inv) out.push(`${of} has no ${want.resourceClass} inventory`)
  else if (inv.total !== want.total || inv.reserved !== want.reserved)
    out.push(
      `${of} holds ${want.resourceClass} total ${inv.total} reserved ${inv.reserved}; the database says total ${want.total} reserved ${want.reserved}`,
    )
  const have = [...view.traits].sort()
  if (have.join(',') !== want.traits.join(','))
    out.push(
      `${of} has traits ${have.join(', ') || '(none)'}; the database says ${want.traits.join(', ')}`,
    )
  return out
}

/**
 * `placement_drift` findings of every host's deployables, in host and name order; a Placement that
 * cannot be read is one `placement_unreachable` finding, and the rest is not compared.
 */
export async function placementDrift(
  handle: DatabaseHandle,
  placement: PlacementClient,
): Promise<Finding[]> {
  const rows: PlacementRow[] = []
  for (const host of await listDeviceHosts(handle.db)) {
    const ofHost = await listPlacementRows(handle.db, host)
    rows.push(...ofHost.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)))
  }
  const findings: Finding[] = []
  try {
    for (const row of rows)
      for (const message of await driftOf(row, placement))
        findings.push({ kind: 'placement_drift', message })
  } catch (err) {
    findings.push({
      kind: 'placement_unreachable',
      message: `Placement could not be read, so drift was not checked: ${errorMessage(err)}`,
    })
  }
  return findings
}
