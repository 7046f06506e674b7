/**
 * The plan of `cyborg db import-openstack` (docs/migrate-from-openstack-cyborg.md): which rows of an
 * OpenStack Cyborg database become which of ours, with their uuids, and every row that cannot, with
 * the reason. Pure: src/db/openstack-import/openstack-source.ts reads the source, src/db/openstack-import/openstack-import-target.ts
 * reads what the target holds (`TargetIndex`) and writes the plan. The tables: inventory in
 * openstack-import-inventory.ts, device profiles and requests in openstack-import-requests.ts.
 */
import type { OpenStackSnapshot } from './openstack-cyborg.js'
import { planDeviceStates } from './openstack-import-device-state.js'
import { planInventory } from './openstack-import-inventory.js'
import { planRequests } from './openstack-import-requests.js'
import {
  IMPORT_TABLES,
  type ImportCounts,
  type ImportPlan,
  type ImportTable,
  type PlanState,
  type SkippedRow,
  type TargetIndex,
} from './openstack-import-plan.js'

/**
 * Plans the import of `snapshot` into a target holding `target`. Every source row ends up either
 * planned or in `skipped` with its reason; rows are linked by uuid (the writer resolves ids).
 */
export function planImport(
  snapshot: OpenStackSnapshot,
  target: TargetIndex,
  now: string,
): ImportPlan {
  const plan: ImportPlan = {
    revision: snapshot.revision,
    devices: [],
    deployables: [],
    attributes: [],
    attachHandles: [],
    deviceProfiles: [],
    arqs: [],
    skipped: [],
    notes: [],
    counts: Object.fromEntries(
      IMPORT_TABLES.map((t) => [t, { source: 0, brought: 0, skipped: 0 }]),
    ) as Record<ImportTable, ImportCounts>,
  }
  const state: PlanState = {
    snapshot,
    target,
    now,
    plan,
    devices: new Map(),
    deployables: new Map(),
    handles: new Map(),
    profiles: new Map(),
    skip: (table, uuid, reason) => void plan.skipped.push({ table, uuid, reason }),
    present(table, uuid, has) {
      if (!has.has(uuid)) return false
      plan.skipped.push({ table, uuid, reason: 'already in the target', present: true })
      return true
    },
  }
  planInventory(state)
  planRequests(state)
  planDeviceStates(plan)

  const source: Record<ImportTable, number> = {
    devices: snapshot.devices.length,
    controlpath_ids: snapshot.controlPaths.length,
    deployables: snapshot.deployables.length,
    attributes: snapshot.attributes.length,
    attach_handles: snapshot.attachHandles.length,
    device_profiles: snapshot.deviceProfiles.length,
    extended_accelerator_requests: snapshot.arqs.length,
  }
  const brought: Record<ImportTable, number> = {
    devices: plan.devices.length,
    controlpath_ids: plan.devices.length,
    deployables: plan.deployables.length,
    attributes: plan.attributes.length,
    attach_handles: plan.attachHandles.length,
    device_profiles: plan.deviceProfiles.length,
    extended_accelerator_requests: plan.arqs.length,
  }
  for (const table of IMPORT_TABLES) {
    plan.counts[table] = {
      source: source[table],
      brought: brought[table],
      skipped: plan.skipped.filter((s) => s.table === table).length,
    }
  }
  return plan
}

/** Rows left out for a reason other than being in the target already: they need a look. */
export function unmappedRows(plan: ImportPlan): SkippedRow[] {
  return plan.skipped.filter((s) => s.present !== true)
}
