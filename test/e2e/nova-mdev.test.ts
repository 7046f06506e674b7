/**
 * The Nova side of an MDEV request (issue 31; docs/nova.md, "MDEV attach handles"): real Nova's
 * Cyborg client (python3-nova, via test/e2e/nova-client.py) binds a vGPU unit of `cyborg up`
 * (the nvidia-gpu driver over a copy of the recorded host `nvidia-gpu/clean`), reads the request
 * back, and Nova's own helpers turn it into what the libvirt driver needs: a parent address Nova
 * accepts, the parent's libvirt node device name, and the `<hostdev type="mdev">` with the uuid.
 * With `[nova]` set (a stand-in answering Nova's events API), Cyborg creates no mdev for Nova's
 * bind: the host's `create` file is left as recorded.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ROOT, startService, type RunningService } from '../support/service.js'
import { novaClientSkip, novaStep } from '../support/peers/nova-client.js'

const skip = novaClientSkip()
const HOST = 'nova-mdev.example'
const VM = '9e7b0000-0000-4000-8000-0000000000a1'
const FIXTURE = path.join(ROOT, 'src/drivers/__fixtures__/nvidia-gpu/clean/sys')
const CREATE = 'sys/bus/pci/devices/0000:d8:00.0/mdev_supported_types/nvidia-471/create'

void describe('real Nova’s cyborg client reads an MDEV request', { skip }, () => {
  let root: string
  let service: RunningService
  let novaApi: Server
  const events: unknown[] = []
  const nova = (args: string[]) => novaStep(service.url, args)

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'cyborg-nova-mdev-'))
    await cp(FIXTURE, path.join(root, 'sys'), { recursive: true })
    // Nova's API as Cyborg sees it: os-server-external-events, every event delivered.
    novaApi = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        events.push(JSON.parse(body))
        res.writeHead(200, { 'content-type': 'application/json' }).end(body)
      })
    })
    await new Promise<void>((r) => novaApi.listen(0, '127.0.0.1', r))
    const { port } = novaApi.address() as AddressInfo
    service = await startService({
      env: {
        CYBORG_NOVA__ENDPOINT_OVERRIDE: `http://127.0.0.1:${port}/v2.1`,
        CYBORG_NOVA__AUTH_TYPE: 'admin_token',
        CYBORG_NOVA__TOKEN: 'admin',
        CYBORG_DEFAULT__HOST: HOST,
        CYBORG_AGENT__HOST_ROOT: root,
        CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
      },
      ready: async (url) =>
        ((await (await fetch(`${url}/v2/devices`)).json()) as { devices: unknown[] }).devices
          .length > 0,
    })
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ name: 'vgpu', groups: [{ 'resources:VGPU': '1' }] }]),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(async () => {
    assert.equal(await service?.stop(), 0, service?.output())
    await rm(root, { recursive: true, force: true })
    await new Promise((r) => novaApi?.close(r))
  })

  void it('binds, reads the ARQ, and composes the mdev as the libvirt driver does', async () => {
    const { deployables } = (await (await fetch(`${service.url}/v2/deployables`)).json()) as {
      deployables: { name: string; rp_uuid: string }[]
    }
    const rp = deployables.find((d) => d.name === `${HOST}_0000:d8:00.0_nvidia-471`)?.rp_uuid
    assert.ok(rp, JSON.stringify(deployables))
    const recorded = await readFile(path.join(root, CREATE), 'utf8')

    const created = await nova(['create', 'vgpu'])
    assert.equal(created.code, 0, created.stderr)
    const [arq] = created.out as { uuid: string }[]
    const binding = { [arq!.uuid]: { hostname: HOST, device_rp_uuid: rp, instance_uuid: VM } }
    const bound = await nova(['bind', JSON.stringify(binding)])
    assert.equal(bound.code, 0, bound.stderr)
    const resolved = await nova(['get', VM, 'resolved'])
    assert.equal(resolved.code, 0, resolved.stderr)
    const [read] = resolved.out as { state: string; attach_handle_uuid: string }[]
    assert.equal(read!.state, 'Bound')

    const view = await nova(['mdev', arq!.uuid])
    assert.equal(view.code, 0, view.stderr)
    const uuid = read!.attach_handle_uuid
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    assert.deepEqual(view.out, {
      type: 'MDEV',
      mdev_type: 'nvidia-471',
      uuid,
      parent_address: '0000:d8:00.0',
      parent_name: 'pci_0000_d8_00_0',
      hostdev:
        '<hostdev mode="subsystem" type="mdev" managed="no" model="vfio-pci">\n' +
        `  <source>\n    <address uuid="${uuid}"/>\n  </source>\n</hostdev>\n`,
    })
    assert.equal(await readFile(path.join(root, CREATE), 'utf8'), recorded, 'no mdev created')
    assert.equal(events.length, 1, 'Nova heard the bind')

    assert.equal((await nova(['delete-instance', VM])).code, 0)
  })
})
