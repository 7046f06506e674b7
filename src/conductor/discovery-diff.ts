/**
 * The pure half of an on-demand discovery's answer: a host's deployables before and after the
 * agent's report, compared by name (the key the inventory diff uses), so that an operator sees
 * what was added, what changed (and which part of it) and what was removed.
 */
import type { DiscoveredItem } from '../rpc/admin-types.js'
import { controlPathText } from '../domain/control-path.js'
import type { CurrentDevice } from '../domain/inventory/inventory-diff.js'

/** One deployable reduced to what an operator may see change. */
export interface DeployableFacts {
  deviceType: string
  address: string
  parts: Record<string, string>
}

const sorted = (items: string[]) => [...items].sort().join('\n')

/** Deployables of a host by name. */
export function flattenInventory(devices: readonly CurrentDevice[]): Map<string, DeployableFacts> {
  const out = new Map<string, DeployableFacts>()
  for (const device of devices) {
    const deviceFacts = [
      device.type,
      device.vendor,
      device.model,
      device.stdBoardInfo ?? '',
      device.vendorBoardInfo ?? '',
    ].join('\n')
    for (const d of device.deployables) {
      out.set(d.name, {
        deviceType: device.type,
        address: controlPathText(device.key),
        parts: {
          num_accelerators: String(d.numAccelerators),
          attributes: sorted(d.attributes.map((a) => `${a.key}=${a.value}`)),
          attach_handles: sorted(d.handles.map((h) => `${h.type} ${h.info}`)),
          removal_pending: String(d.removalPending),
          device: deviceFacts,
        },
      })
    }
  }
  return out
}

/** What differs between two flattened inventories, each list in name order. */
export function diffDeployables(
  before: ReadonlyMap<string, DeployableFacts>,
  after: ReadonlyMap<string, DeployableFacts>,
): { added: DiscoveredItem[]; changed: DiscoveredItem[]; removed: DiscoveredItem[] } {
  const item = (name: string, f: DeployableFacts, fields?: string[]): DiscoveredItem => ({
    name,
    deviceType: f.deviceType,
    address: f.address,
    ...(fields ? { fields } : {}),
  })
  const byName = (a: DiscoveredItem, b: DiscoveredItem) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0
  const added: DiscoveredItem[] = []
  const changed: DiscoveredItem[] = []
  const removed: DiscoveredItem[] = []
  for (const [name, now] of after) {
    const was = before.get(name)
    if (!was) {
      added.push(item(name, now))
      continue
    }
    const fields = Object.keys(now.parts).filter((k) => now.parts[k] !== was.parts[k])
    if (fields.length > 0) changed.push(item(name, now, fields))
  }
  for (const [name, was] of before) if (!after.has(name)) removed.push(item(name, was))
  return { added: added.sort(byName), changed: changed.sort(byName), removed: removed.sort(byName) }
}
