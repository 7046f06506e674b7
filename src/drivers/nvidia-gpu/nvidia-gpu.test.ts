import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  buildNvidiaDevices,
  createNvidiaGpuDriver,
  lspciModel,
  parseCount,
  parseLspciNnD,
  parseNvidiaSmiXml,
  vgpuTrait,
  type NvidiaFunction,
} from './nvidia-gpu.js'
import { parsePciAddress } from '../pci/pci-sysfs.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'

const fixture = (c: string): string =>
  new URL(`../__fixtures__/nvidia-gpu/${c}`, import.meta.url).pathname
const fixtureFile = (c: string, f: string): Promise<string> =>
  createFixtureHostProbe('/').readFile(`${fixture(c)}/${f}`)

const gpu = (address: string, extra: Partial<NvidiaFunction> = {}): NvidiaFunction => ({
  address,
  pci: parsePciAddress(address)!,
  vendorId: '10de',
  productId: '20f1',
  classCode: '030200',
  mdevTypes: [],
  ...extra,
})

void describe('nvidia-gpu: parseLspciNnD', () => {
  void it('parses the pgpu fixture, every device line', async () => {
    const entries = parseLspciNnD(await fixtureFile('pgpu', 'lspci-nnD.txt'))
    assert.equal(entries.length, 6)
    assert.deepEqual(entries[2], {
      address: '0000:3b:00.0',
      className: '3D controller',
      classCode: '0302',
      description: 'NVIDIA Corporation TU104GL [Tesla T4]',
      vendorId: '10de',
      productId: '1eb8',
    })
    assert.equal(entries[4]!.description, 'NVIDIA Corporation TU104 HD Audio Controller')
  })

  void it('skips truncated and garbage lines, and accepts prog-if suffixes', async () => {
    assert.deepEqual(
      parseLspciNnD(await fixtureFile('malformed', 'lspci-nnD.txt')).map((e) => e.address),
      ['0000:af:00.0'],
    )
    const [e] = parseLspciNnD(
      '0000:00:17.0 SATA controller [0106]: Intel Corporation Device [8086:a352] (rev 10) (prog-if 01 [AHCI 1.0])',
    )
    assert.equal(e?.productId, 'a352')
    assert.deepEqual(parseLspciNnD(''), [])
  })

  void it('takes the bracketed marketing name as the model', () => {
    assert.equal(lspciModel('NVIDIA Corporation GA100 [A100 PCIe 40GB]'), 'A100 PCIe 40GB')
    assert.equal(lspciModel('NVIDIA Corporation Device 2331'), 'Device 2331')
  })
})

void describe('nvidia-gpu: parseNvidiaSmiXml', () => {
  void it('reads product name, uuid, MIG mode and MIG devices', async () => {
    const [g, ...rest] = parseNvidiaSmiXml(await fixtureFile('mig', 'nvidia-smi-q-x.xml'))
    assert.equal(rest.length, 0)
    assert.deepEqual(g, {
      address: '0000:3b:00.0',
      productName: 'NVIDIA A100 80GB PCIe',
      uuid: 'GPU-aa11bb22-cc33-dd44-ee55-ff6677889900',
      migMode: 'Enabled',
      migDevices: [
        {
          index: '0',
          gpuInstanceId: '1',
          computeInstanceId: '0',
          memoryTotal: '40192 MiB',
          multiprocessorCount: '42',
        },
        {
          index: '1',
          gpuInstanceId: '5',
          computeInstanceId: '0',
          memoryTotal: '19968 MiB',
          multiprocessorCount: '28',
        },
      ],
    })
  })

  void it('keeps the complete GPUs of a truncated document and treats N/A as absent', async () => {
    assert.deepEqual(parseNvidiaSmiXml(await fixtureFile('malformed', 'nvidia-smi-q-x.xml')), [
      { address: '0000:af:00.0', productName: 'Tesla V100-PCIE-16GB', migDevices: [] },
    ])
    assert.deepEqual(
      parseNvidiaSmiXml('<gpu id="nonsense"><product_name>x</product_name></gpu>'),
      [],
    )
    assert.equal(
      parseNvidiaSmiXml('<gpu id="0000:01:00.0"><product_name>A &amp; B</product_name></gpu>')[0]
        ?.productName,
      'A & B',
    )
  })

  void it('reads the board serial (the device identity, docs/identity.md); N/A is none', async () => {
    const gpus = parseNvidiaSmiXml(await fixtureFile('ecc', 'nvidia-smi-q-x.xml'))
    assert.deepEqual(
      gpus.map((g) => g.serial),
      ['1324021001234', '1324021005678'],
    )
    assert.equal(
      parseNvidiaSmiXml('<gpu id="0000:01:00.0"><serial>N/A</serial></gpu>')[0]?.serial,
      undefined,
    )
  })
})

void describe('nvidia-gpu: traits and counts', () => {
  void it('names vGPU traits from the last word of the type name, else the type id', () => {
    assert.equal(
      vgpuTrait({ id: 'nvidia-471', name: 'GRID A100-4C' }),
      'CUSTOM_NVIDIA_VGPU_A100_4C',
    )
    assert.equal(vgpuTrait({ id: 'nvidia-222', name: 'GRID T4-1B' }), 'CUSTOM_NVIDIA_VGPU_T4_1B')
    assert.equal(vgpuTrait({ id: 'nvidia-223' }), 'CUSTOM_NVIDIA_VGPU_NVIDIA_223')
    assert.equal(vgpuTrait({ id: 'nvidia-224', name: '***' }), 'CUSTOM_NVIDIA_VGPU_NVIDIA_224')
  })

  void it('parses counts strictly', () => {
    assert.equal(parseCount('15\n'), 15)
    assert.equal(parseCount('-1'), undefined)
    assert.equal(parseCount('lots'), undefined)
    assert.equal(parseCount(''), undefined)
  })
})

void describe('nvidia-gpu: buildNvidiaDevices', () => {
  const empty = { lspci: [], smi: [] }

  void it('attributes VFs to their PF and never offers the PF with them', () => {
    const functions = [
      gpu('0000:3b:00.0'),
      gpu('0000:3b:00.4', { physfn: '0000:3b:00.0' }),
      gpu('0000:3b:00.5', { physfn: '0000:3b:00.0' }),
    ]
    const [d, ...rest] = buildNvidiaDevices('h', { functions, ...empty })
    assert.equal(rest.length, 0)
    assert.deepEqual(d?.controlPath.info, {
      domain: '0000',
      bus: '3b',
      device: '00',
      function: '0',
    })
    assert.deepEqual(
      d?.deployables.map((x) => x.name),
      ['h_0000:3b:00.4', 'h_0000:3b:00.5'],
    )
    assert.deepEqual(
      d?.deployables.map((x) => x.attachHandles[0]?.info.function),
      ['4', '5'],
    )
  })

  void it('offers all mdev types with instances as VGPU, or only those in vgpu_types; none offered → PGPU', () => {
    const functions = [
      gpu('0000:3b:00.0', {
        mdevTypes: [
          { id: 'nvidia-1', name: 'GRID X-1Q', total: 2 },
          { id: 'nvidia-2', name: 'GRID X-2Q', total: 0 },
        ],
      }),
    ]
    const all = buildNvidiaDevices('h', { functions, ...empty })
    assert.deepEqual(
      all[0]?.deployables.map((x) => [x.name, x.numAccelerators, x.attachHandles.length]),
      [['h_0000:3b:00.0_nvidia-1', 2, 2]],
    )
    assert.deepEqual(all[0]?.deployables[0]?.attachHandles[1], {
      type: 'MDEV',
      info: {
        asked_type: 'nvidia-1',
        vgpu_mark: 'nvidia-1_1',
        domain: '0000',
        bus: '3b',
        device: '00',
        function: '0',
      },
    })
    const onlyExhausted = buildNvidiaDevices(
      'h',
      { functions, ...empty },
      { vgpuTypes: new Set(['nvidia-2']) },
    )
    assert.deepEqual(
      onlyExhausted[0]?.deployables,
      [],
      'an exhausted type offers nothing, and the GPU is not offered whole',
    )
    const none = buildNvidiaDevices(
      'h',
      { functions, ...empty },
      { vgpuTypes: new Set(['nvidia-9']) },
    )
    assert.deepEqual(
      none[0]?.deployables.map((x) => x.attributes[0]?.value),
      ['PGPU'],
    )
  })

  void it('prefers the nvidia-smi product name, then lspci, then the product id', () => {
    const functions = [gpu('0000:3b:00.0'), gpu('0000:5e:00.0'), gpu('0000:af:00.0')]
    const lspci = parseLspciNnD(
      '0000:5e:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20f1] (rev a1)',
    )
    const smi = parseNvidiaSmiXml(
      '<gpu id="00000000:3B:00.0"><product_name>NVIDIA A100-PCIE-40GB</product_name></gpu>',
    )
    assert.deepEqual(
      buildNvidiaDevices('h', { functions, lspci, smi }).map((d) => d.model),
      ['NVIDIA A100-PCIE-40GB', 'A100 PCIe 40GB', '20f1'],
    )
  })
})

void describe('nvidia-gpu: discover()', () => {
  void it('runs lspci and nvidia-smi only when enabled', async () => {
    const host = createFixtureHostProbe(fixture('mig'))
    const [withSmi] = await createNvidiaGpuDriver({ host, hostname: 'h' }).discover()
    assert.equal(withSmi?.model, 'NVIDIA A100 80GB PCIe')
    const [lspciOnly] = await createNvidiaGpuDriver(
      { host, hostname: 'h' },
      { nvidia_smi: 'false' },
    ).discover()
    assert.equal(lspciOnly?.model, 'A100 PCIe 80GB')
    assert.equal(lspciOnly?.vendorBoardInfo, null)
    const [bare] = await createNvidiaGpuDriver(
      { host, hostname: 'h' },
      { nvidia_smi: 'false', lspci: 'false' },
    ).discover()
    assert.equal(bare?.model, '20b5')
  })

  void it('honours vgpu_types', async () => {
    const host = createFixtureHostProbe(fixture('vgpu'))
    const devices = await createNvidiaGpuDriver(
      { host, hostname: 'h' },
      { vgpu_types: 'nvidia-319' },
    ).discover()
    assert.deepEqual(
      devices.flatMap((d) => d.deployables.map((x) => x.name)),
      ['h_0000:3b:00.0_nvidia-319', 'h_0000:d8:00.0'],
    )
  })

  void it('stops on an aborted signal', async () => {
    const driver = createNvidiaGpuDriver({ host: createMemoryHostProbe({}), hostname: 'h' })
    await assert.rejects(driver.discover({ signal: AbortSignal.abort() }), { code: 'ABORTED' })
  })

  void it('never throws on random bytes in sysfs files and command outputs (property)', async () => {
    const dev = '/sys/bus/pci/devices/0000:3b:00.0'
    const vf = '/sys/bus/pci/devices/0000:3b:00.4'
    const random = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('latin1'))
    const text = (...valid: string[]): fc.Arbitrary<string> =>
      fc.oneof(random, fc.constantFrom(...valid))
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          vendor: text('0x10de\n'),
          device: text('0x20f1\n'),
          cls: text('0x030200\n', '0x030000\n'),
          physfn: text('PCI_SLOT_NAME=0000:3b:00.0\n', 'PCI_SLOT_NAME=0000:3b:00.4\n'),
          name: text('GRID A100-4C\n'),
          available: text('3\n', '0\n'),
          uevent: text('DRIVER=nvidia\n', 'DRIVER=vfio-pci\n'),
          aer: text('TOTAL_ERR_FATAL 1\n', 'TOTAL_ERR_COR 0\n'),
          width: text('8\n', '16\n'),
          lspci: text(
            '0000:3b:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20f1] (rev a1)\n',
          ),
          smi: text(
            '<gpu id="00000000:3B:00.0"><product_name>A100</product_name><mig_devices><mig_device><index>0</index></mig_device></mig_devices></gpu>',
          ),
          type: fc.oneof(
            fc.constant('nvidia-471'),
            fc
              .string({ maxLength: 8 })
              .filter((s) => s !== '' && !s.includes('/') && s !== '.' && s !== '..'),
          ),
        }),
        async (r) => {
          const files: Record<string, string> = {}
          for (const d of [dev, vf]) {
            Object.assign(files, {
              [`${d}/vendor`]: r.vendor,
              [`${d}/device`]: r.device,
              [`${d}/class`]: r.cls,
              [`${d}/mdev_supported_types/${r.type}/name`]: r.name,
              [`${d}/mdev_supported_types/${r.type}/available_instances`]: r.available,
              [`${d}/mdev_supported_types/${r.type}/devices/x`]: '',
              [`${d}/uevent`]: r.uevent,
              [`${d}/aer_dev_fatal`]: r.aer,
              [`${d}/current_link_width`]: r.width,
              [`${d}/max_link_width`]: r.width === '8\n' ? '16\n' : r.width,
            })
          }
          files[`${vf}/physfn/uevent`] = r.physfn
          const host = createMemoryHostProbe(files, {
            'lspci -nnD': r.lspci,
            'nvidia-smi -q -x': r.smi,
          })
          assert.ok(Array.isArray(await createNvidiaGpuDriver({ host, hostname: 'h' }).discover()))
        },
      ),
      { numRuns: 150 },
    )
  })
})
