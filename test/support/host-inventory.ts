/**
 * Reads one host's inventory back from the v2 API and from Placement and asserts that both hold
 * exactly what its fixture tree should yield: the devices, one deployable per expected one, and
 * per deployable a child provider of the host's compute node with the right inventory and traits.
 */
import assert from 'node:assert/strict'
import type { PlacementClient } from '../../src/openstack/placement.js'
import { deployablesOf, type FixtureHost } from './fixture-host.js'

export interface ApiDeployable {
  uuid: string
  name: string
  rp_uuid: string | null
  num_accelerators: number
  attributes_list: string
}

/** What the API and Placement hold for a host (uuids, to compare across restarts). */
export interface HostInventory {
  devices: string[]
  deployables: ApiDeployable[]
  rootUuid: string
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url)
  assert.equal(res.status, 200, `GET ${url}: ${res.status}`)
  return (await res.json()) as T
}

/** `attributes_list` is Python's json.dumps of single-key dicts: `[{"rc": "X"}, {"trait0": "Y"}]`. */
const attributesOf = (d: ApiDeployable) =>
  (JSON.parse(d.attributes_list) as Record<string, string>[]).map((o) => {
    const [key, value] = Object.entries(o)[0]!
    return { key, value }
  })

const sorted = <T>(xs: T[]) => [...xs].sort()

export async function checkHost(
  api: string,
  placement: PlacementClient,
  host: FixtureHost,
  autoActivate: boolean,
): Promise<HostInventory> {
  const { devices } = await getJson<{ devices: { uuid: string }[] }>(
    `${api}/v2/devices?hostname=${host.host}`,
  )
  assert.equal(devices.length, host.expected.length, `${host.host}: devices in the API`)
  const all = (await getJson<{ deployables: ApiDeployable[] }>(`${api}/v2/deployables`)).deployables
  const deployables = all.filter((d) => d.name.startsWith(`${host.host}_`))
  const expected = deployablesOf(host.expected)
  assert.deepEqual(
    sorted(deployables.map((d) => d.name)),
    sorted(expected.map((d) => d.name)),
    `${host.host}: deployables`,
  )

  const root = await placement.findProviderByName(host.host)
  assert.ok(root, `${host.host}: no compute node provider in Placement`)
  assert.ok(
    (await placement.getTraits(root.uuid)).includes('COMPUTE_ACCELERATORS'),
    `${host.host}: root traits`,
  )
  const children = (await placement.listTree(root.uuid)).filter((p) => p.uuid !== root.uuid)
  assert.deepEqual(
    sorted(children.map((p) => p.uuid)),
    sorted(deployables.map((d) => d.rp_uuid ?? 'null')),
    `${host.host}: one provider per deployable, named by its rp_uuid`,
  )
  for (const want of expected) {
    const d = deployables.find((x) => x.name === want.name)!
    assert.equal(d.num_accelerators, want.numAccelerators)
    assert.deepEqual(attributesOf(d), want.attributes, `${d.name}: attributes`)
    const rp = children.find((p) => p.uuid === d.rp_uuid)!
    assert.equal(rp.parentProviderUuid, root.uuid)
    assert.equal(rp.name, d.name)
    const rc = want.attributes.find((a) => a.key === 'rc')!.value
    const total = want.numAccelerators
    const inventory = await placement.getInventories(rp.uuid)
    assert.deepEqual(Object.keys(inventory), [rc], `${d.name}: inventory classes`)
    const { total: t, max_unit: max, reserved } = inventory[rc]!
    assert.deepEqual(
      { t, max, reserved },
      { t: total, max: total, reserved: autoActivate ? 0 : total },
      `${d.name}: inventory`,
    )
    const traits = new Set([
      'OWNER_CYBORG',
      ...want.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value),
    ])
    assert.deepEqual(
      sorted(await placement.getTraits(rp.uuid)),
      sorted([...traits]),
      `${d.name}: traits`,
    )
  }
  return { devices: devices.map((d) => d.uuid), deployables, rootUuid: root.uuid }
}

/** Retries `check` until it passes (then returns its result) or `timeoutMs` ends (then rethrows). */
export async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 20_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, everyMs))
    }
  }
}
