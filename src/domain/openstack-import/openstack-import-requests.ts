/**
 * The request half of the import plan (openstack-import.ts): device profiles, checked by the rules
 * our API applies to a new one (a profile we could not have accepted is left out, with the rule it
 * breaks), and accelerator requests in every state, with their instance, host, provider, project,
 * attach handle and deployable, so that Nova's references keep working.
 */
import { isArqState } from '../arq.js'
import {
  ACCEL_KEYS,
  CUSTOM_NAME_PATTERN,
  DEVICE_PROFILE_TEXT_MAX,
  MAX_RESOURCE_AMOUNT,
  normalizeDeviceProfile,
  STANDARD_RESOURCE_CLASSES,
} from '../device-profile.js'
import { errorMessage } from '../error-message.js'
import { osTimestamp, type PlanState } from './openstack-import-plan.js'

const CUSTOM = new RegExp(`^${CUSTOM_NAME_PATTERN}$`)
const NAME = /^[a-zA-Z0-9_-]+$/

/** Why one request group breaks our rules; undefined when it keeps them. */
function groupProblem(group: unknown, i: number): string | undefined {
  if (group === null || typeof group !== 'object' || Array.isArray(group))
    return `group ${i} is not a JSON object`
  const entries = Object.entries(group)
  if (entries.length === 0) return `group ${i} is empty`
  for (const [key, raw] of entries) {
    const where = `group ${i} key ${key}`
    if (typeof raw !== 'string' && typeof raw !== 'number')
      return `${where}: the value is not a string`
    const value = String(raw).trim()
    if (key.length > DEVICE_PROFILE_TEXT_MAX)
      return `${where}: longer than ${DEVICE_PROFILE_TEXT_MAX}`
    if (key.startsWith('resources:')) {
      const rc = key.slice('resources:'.length)
      if (!STANDARD_RESOURCE_CLASSES.includes(rc) && !CUSTOM.test(rc))
        return `${where}: unknown resource class (${STANDARD_RESOURCE_CLASSES.join(', ')} or CUSTOM_*)`
      const n = Number(value)
      if (!/^\d+$/.test(value) || n < 1 || n > MAX_RESOURCE_AMOUNT)
        return `${where}: the amount ${String(raw)} is not a positive integer`
    } else if (key.startsWith('trait:')) {
      if (!CUSTOM.test(key.slice('trait:'.length).trim()))
        return `${where}: trait names must start with CUSTOM_`
      if (value !== 'required' && value !== 'forbidden')
        return `${where}: the value must be required or forbidden`
    } else if (key.startsWith('accel:')) {
      if (!ACCEL_KEYS.includes(key)) return `${where}: unknown accel key (${ACCEL_KEYS.join(', ')})`
      if (value === '' || value.length > DEVICE_PROFILE_TEXT_MAX)
        return `${where}: the value must be 1 to ${DEVICE_PROFILE_TEXT_MAX} characters`
    } else return `${where}: keys must start with resources:, trait: or accel:`
  }
  return undefined
}

/** The groups of a profile_json our rules accept, or why not. */
export function profileGroups(
  name: string,
  profileJson: string,
): { groups: Record<string, string>[] } | { problem: string } {
  if (!NAME.test(name) || name.length > DEVICE_PROFILE_TEXT_MAX)
    return { problem: `its name ${name} may hold only letters, digits, - and _ (at most 255)` }
  let parsed: unknown
  try {
    parsed = JSON.parse(profileJson)
  } catch {
    return { problem: 'its profile_json is not JSON' }
  }
  const groups = (parsed as { groups?: unknown } | null)?.groups
  if (!Array.isArray(groups) || groups.length === 0)
    return { problem: 'its profile_json has no list of groups' }
  for (const [i, g] of groups.entries()) {
    const problem = groupProblem(g, i)
    if (problem !== undefined) return { problem }
  }
  try {
    return {
      groups: normalizeDeviceProfile({
        name,
        groups: groups as Record<string, string | number>[],
      }).groups,
    }
  } catch (err) {
    return { problem: errorMessage(err) }
  }
}

export function planRequests(state: PlanState): void {
  planProfiles(state)
  planArqs(state)
}

function planProfiles(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const names = new Map<string, string>()
  for (const p of snapshot.deviceProfiles) {
    if (state.present('device_profiles', p.uuid, target.deviceProfiles)) {
      state.profiles.set(p.id, p.uuid)
      continue
    }
    const checked = profileGroups(p.name, p.profileJson)
    const reason =
      'problem' in checked
        ? checked.problem
        : names.has(p.name)
          ? `its name ${p.name} is also profile ${names.get(p.name)}'s`
          : target.profileNames.has(p.name)
            ? `its name ${p.name} is profile ${target.profileNames.get(p.name)}'s in the target`
            : undefined
    if (reason !== undefined || 'problem' in checked) {
      state.skip('device_profiles', p.uuid, reason!)
      continue
    }
    names.set(p.name, p.uuid)
    state.profiles.set(p.id, p.uuid)
    plan.deviceProfiles.push({
      uuid: p.uuid,
      name: p.name,
      description: p.description,
      groups: checked.groups,
      createdAt: osTimestamp(p.createdAt, now),
      updatedAt: p.updatedAt === null ? null : osTimestamp(p.updatedAt, now),
    })
  }
}

function planArqs(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const uuidIn =
    <R extends { id: number; uuid: string }>(rows: readonly R[]) =>
    (id: number) =>
      rows.find((r) => r.id === id)?.uuid
  const missing = (kind: string, id: number, uuidOf: (id: number) => string | undefined) => {
    const uuid = uuidOf(id)
    return uuid === undefined
      ? `its ${kind} (id ${id}) does not exist`
      : `its ${kind} ${uuid} is not brought over`
  }
  const heldBy = new Map<string, string>()
  const planned = new Map(plan.attachHandles.map((h) => [h.uuid, h]))
  for (const a of snapshot.arqs) {
    if (state.present('extended_accelerator_requests', a.uuid, target.arqs)) continue
    const profile = state.profiles.get(a.deviceProfileId)
    const handle = a.attachHandleId === null ? undefined : state.handles.get(a.attachHandleId)
    const deployable = a.deployableId === null ? undefined : state.deployables.get(a.deployableId)
    const reason = !isArqState(a.state)
      ? `state ${a.state} is not one we know`
      : profile === undefined
        ? missing('device profile', a.deviceProfileId, uuidIn(snapshot.deviceProfiles))
        : a.attachHandleId !== null && handle === undefined
          ? missing('attach handle', a.attachHandleId, uuidIn(snapshot.attachHandles))
          : a.deployableId !== null && deployable === undefined
            ? missing('deployable', a.deployableId, uuidIn(snapshot.deployables))
            : a.state === 'Bound' && handle === undefined
              ? 'it is Bound but holds no attach handle'
              : handle && heldBy.has(handle.uuid)
                ? `its attach handle ${handle.uuid} is also request ${heldBy.get(handle.uuid)}'s`
                : handle && target.heldHandles.has(handle.uuid)
                  ? `its attach handle ${handle.uuid} is request ${target.heldHandles.get(handle.uuid)}'s in the target`
                  : handle && deployable !== undefined && handle.deployableUuid !== deployable
                    ? `its attach handle ${handle.uuid} belongs to another deployable than ${deployable}`
                    : !Number.isInteger(a.deviceProfileGroupId) || a.deviceProfileGroupId < 0
                      ? `device_profile_group_id ${a.deviceProfileGroupId} is not a group index`
                      : undefined
    if (reason !== undefined) {
      state.skip('extended_accelerator_requests', a.uuid, reason)
      continue
    }
    if (handle) {
      heldBy.set(handle.uuid, a.uuid)
      const row = planned.get(handle.uuid)
      if (row && !row.inUse) {
        row.inUse = true
        plan.notes.push(`attach handle ${handle.uuid} is held by request ${a.uuid}: marked in use`)
      }
      if (deployable === undefined)
        plan.notes.push(`request ${a.uuid} names no deployable: its attach handle's is recorded`)
    }
    plan.arqs.push({
      uuid: a.uuid,
      state: a.state,
      profileUuid: profile!,
      groupId: a.deviceProfileGroupId,
      projectId: a.projectId,
      hostname: a.hostname,
      deviceRpUuid: a.deviceRpUuid,
      instanceUuid: a.instanceUuid,
      handleUuid: handle?.uuid ?? null,
      deployableUuid: deployable ?? handle?.deployableUuid ?? null,
      createdAt: osTimestamp(a.createdAt, now),
      updatedAt: a.updatedAt === null ? null : osTimestamp(a.updatedAt, now),
    })
  }
  for (const h of plan.attachHandles) {
    if (h.inUse && !heldBy.has(h.uuid))
      plan.notes.push(
        `attach handle ${h.uuid} is in use but no request brought over holds it: kept in use (cyborg db check reports it)`,
      )
  }
}
