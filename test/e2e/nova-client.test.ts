/**
 * Real Nova's Cyborg client (Debian python3-nova, `nova.accelerator.cyborg`, driven by
 * test/e2e/nova-client.py under /usr/bin/python3) against `cyborg up`: what nova-api does at boot
 * with a flavor that names a device profile, then what nova-conductor and nova-compute do with its
 * accelerator requests (create, bind, wait for resolved, delete).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startService, type RunningService } from '../support/service.js'
import { novaClientSkip, novaStep } from '../support/peers/nova-client.js'

const skip = novaClientSkip()
const nova = (service: RunningService, args: string[]) => novaStep(service.url, args)

void describe('real Nova cyborg client against cyborg up', { skip }, () => {
  let service: RunningService
  before(async () => {
    service = await startService({
      env: { CYBORG_DEFAULT__HOST: 'nova-e2e.example', CYBORG_AGENT__AUTO_ACTIVATE: 'true' },
    })
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        {
          name: 'dp-nova',
          groups: [
            {
              'resources:FPGA': '1',
              'trait:CUSTOM_FAKE_DEVICE': 'required',
              'accel:function_id': 'gzip',
            },
            { 'resources:PGPU': '2', 'trait:CUSTOM_OLD': 'forbidden' },
          ],
        },
      ]),
    })
    assert.equal(res.status, 201, await res.text())
    const arqProfile = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        {
          name: 'dp-nova-arq',
          groups: [{ 'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
        },
      ]),
    })
    assert.equal(arqProfile.status, 201, await arqProfile.text())
  })
  after(async () => {
    assert.equal(await service?.stop(), 0, service?.output())
  })

  void it('turns the device profile into Placement request groups, as nova-api does at boot', async () => {
    const r = await nova(service, ['groups', 'dp-nova'])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(r.out, [
      {
        requester_id: 'device_profile_0',
        resources: { FPGA: 1 },
        required_traits: ['CUSTOM_FAKE_DEVICE'],
        forbidden_traits: [],
      },
      {
        requester_id: 'device_profile_1',
        resources: { PGPU: 2 },
        required_traits: [],
        forbidden_traits: ['CUSTOM_OLD'],
      },
    ])
  })

  void it('fails the boot with Nova’s own error for an unknown profile', async () => {
    const r = await nova(service, ['groups', 'no-such-profile'])
    assert.equal(r.code, 3, r.stderr)
    assert.deepEqual(r.out, {
      error: 'DeviceProfileError',
      message: 'Device profile name no-such-profile: Expected 1 device profile but got nothing.',
    })
  })

  void it('creates, binds, reads back resolved, and deletes ARQs as nova-conductor and nova-compute do', async () => {
    const instance = '0e9c1c1e-7a2b-4c3d-9e8f-0a1b2c3d4e5f'
    const created = await nova(service, ['create', 'dp-nova-arq'])
    assert.equal(created.code, 0, created.stderr)
    const arqs = created.out as { uuid: string; device_profile_group_id: number; state: string }[]
    assert.deepEqual(
      arqs.map((a) => [a.device_profile_group_id, a.state]),
      [
        [0, 'Initial'],
        [0, 'Initial'],
      ],
    )

    // Before binding the instance has no ARQs: Nova calls that an error.
    const none = await nova(service, ['get', instance])
    assert.equal(none.code, 3, none.stderr)
    assert.equal((none.out as { error: string }).error, 'AcceleratorRequestOpFailed')

    const deployables = (await (await fetch(`${service.url}/v2/deployables`)).json()) as {
      deployables: { rp_uuid: string }[]
    }
    const rp = deployables.deployables[0]!.rp_uuid
    const bindings = Object.fromEntries(
      arqs.map((a) => [
        a.uuid,
        { hostname: 'nova-e2e.example', device_rp_uuid: rp, instance_uuid: instance },
      ]),
    )
    const bound = await nova(service, ['bind', JSON.stringify(bindings)])
    assert.equal(bound.code, 0, bound.stderr)

    const resolved = await nova(service, ['get', instance, 'resolved'])
    assert.equal(resolved.code, 0, resolved.stderr)
    const shown = resolved.out as {
      uuid: string
      state: string
      attach_handle_type: string
      attach_handle_info: object
    }[]
    assert.deepEqual(shown.map((a) => a.uuid).sort(), arqs.map((a) => a.uuid).sort())
    for (const a of shown) {
      assert.equal(a.state, 'Bound')
      assert.equal(a.attach_handle_type, 'TEST_PCI')
      assert.deepEqual(Object.keys(a.attach_handle_info).sort(), [
        'bus',
        'device',
        'domain',
        'function',
      ])
    }
    const one = await nova(service, ['get-one', arqs[0]!.uuid])
    assert.equal(one.code, 0, one.stderr)
    assert.equal((one.out as { uuid: string }).uuid, arqs[0]!.uuid)

    for (const step of [
      ['delete-uuids', arqs[0]!.uuid],
      ['delete-instance', instance],
      ['delete-instance', instance],
    ]) {
      const r = await nova(service, step)
      assert.equal(r.code, 0, r.stderr)
    }
    const gone = await fetch(`${service.url}/v2/accelerator_requests/${arqs[1]!.uuid}`)
    assert.equal(gone.status, 404)
  })
})
