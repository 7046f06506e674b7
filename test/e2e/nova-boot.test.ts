/**
 * A VM boot as Nova drives it, with Nova's real Cyborg client (python3-nova, via
 * test/e2e/nova-client.py) and real Placement, against `cyborg up`:
 * request groups from the device profile → an allocation candidate from Placement → create the
 * ARQs → bind them to the candidate's provider → resolved → attach handle → delete by instance.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startService, type RunningService } from '../support/service.js'
import { novaClientSkip, novaStep } from '../support/peers/nova-client.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = novaClientSkip() ?? (await placementSkip())
const HOST = 'nova-boot.example'
const VM = '9e7b0000-0000-4000-8000-000000000042'

type Arq = {
  uuid: string
  state: string
  device_profile_group_id: number
  attach_handle_type: string
  attach_handle_info: Record<string, string>
  device_rp_uuid: string | null
  hostname: string | null
  instance_uuid: string | null
}

void describe('a VM boot with real Nova’s cyborg client and real Placement', { skip }, () => {
  let placement: RunningPlacement
  let service: RunningService
  const nova = (args: string[]) => novaStep(service.url, args)

  before(async () => {
    placement = await startPlacement()
    service = await startService({
      env: {
        CYBORG_DEFAULT__HOST: HOST,
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_PLACEMENT__ENDPOINT_OVERRIDE: placement.url,
        CYBORG_PLACEMENT__AUTH_TYPE: 'admin_token',
        CYBORG_PLACEMENT__TOKEN: 'admin',
        CYBORG_PLACEMENT__CREATE_ROOT_PROVIDER: 'true',
      },
      ready: async (url) =>
        ((await (await fetch(`${url}/v2/devices`)).json()) as { devices: unknown[] }).devices
          .length > 0,
    })
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        {
          name: 'fpga-vm',
          groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
        },
      ]),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(async () => {
    assert.equal(await service?.stop(), 0, service?.output())
    await placement?.stop()
  })

  void it('boots: groups, candidate, create, bind, resolved, handle, delete', async () => {
    const groups = await nova(['groups', 'fpga-vm'])
    assert.equal(groups.code, 0, groups.stderr)
    const [group] = groups.out as {
      requester_id: string
      resources: Record<string, number>
      required_traits: string[]
    }[]
    // What Nova's scheduler asks Placement for: the group as a suffixed request group.
    const q = new URLSearchParams({
      resources_dp0: Object.entries(group!.resources)
        .map(([rc, n]) => `${rc}:${n}`)
        .join(','),
      required_dp0: group!.required_traits.join(','),
      group_policy: 'none',
    })
    const cand = await fetch(`${placement.url}/allocation_candidates?${q}`, {
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' },
    })
    assert.equal(cand.status, 200, await cand.clone().text())
    const { allocation_requests: requests } = (await cand.json()) as {
      allocation_requests: { mappings: Record<string, string[]> }[]
    }
    assert.ok(requests.length > 0, 'Placement offers the fake FPGA')
    // Placement maps each request group by its suffix, underscore included.
    const rp = requests[0]!.mappings._dp0?.[0]
    assert.ok(rp, JSON.stringify(requests[0]))

    const created = await nova(['create', 'fpga-vm'])
    assert.equal(created.code, 0, created.stderr)
    const arqs = created.out as Arq[]
    assert.deepEqual(
      arqs.map((a) => [a.state, a.device_profile_group_id]),
      [['Initial', 0]],
    )

    const bindings = Object.fromEntries(
      arqs.map((a) => [a.uuid, { hostname: HOST, device_rp_uuid: rp, instance_uuid: VM }]),
    )
    const bound = await nova(['bind', JSON.stringify(bindings)])
    assert.equal(bound.code, 0, bound.stderr)

    const resolved = await nova(['get', VM, 'resolved'])
    assert.equal(resolved.code, 0, resolved.stderr)
    const [arq] = resolved.out as Arq[]
    assert.equal(arq!.state, 'Bound')
    assert.equal(arq!.attach_handle_type, 'TEST_PCI')
    assert.deepEqual(Object.keys(arq!.attach_handle_info).sort(), [
      'bus',
      'device',
      'domain',
      'function',
    ])
    assert.deepEqual([arq!.hostname, arq!.device_rp_uuid, arq!.instance_uuid], [HOST, rp, VM])

    const one = await nova(['get-one', arq!.uuid])
    assert.equal((one.out as Arq).uuid, arq!.uuid)

    assert.equal((await nova(['delete-instance', VM])).code, 0)
    const gone = await nova(['get', VM])
    // Nova treats an instance without ARQs as an error: exactly what it would see after delete.
    assert.equal(gone.code, 3)
    assert.equal((gone.out as { error: string }).error, 'AcceleratorRequestOpFailed')
    assert.equal((await nova(['delete-instance', VM])).code, 0, 'delete by instance is idempotent')
  })
})
