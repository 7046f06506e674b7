/**
 * Writes a synthetic host for the discovery benchmark into `dir`, in the layout the fixture host
 * probe replays (src/drivers/host-probe/fixture-host-probe.ts): `sys/bus/pci/devices/<bdf>/…`,
 * `sys/class/nvme/…` and recorded command outputs named in `commands.json`. Every function is
 * listed in the PCI tree, as on a real host, so every PCI-scanning driver reads all of them.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'

export interface HostShape {
  /** NVIDIA Tesla T4s, each with four vGPU types (1 + 2 + 4 + 8 instances). */
  gpus: number
  /** Intel QAT 4xxx PFs, each with `qatVfs` SR-IOV VFs. */
  qatPfs: number
  qatVfs: number
  /** Samsung NVMe controllers (PCI function + `/sys/class/nvme/nvme<N>`). */
  nvmes: number
  /** Generic PCI functions (vendor 1137, product 0071) matched by the pci driver's device_spec. */
  generic: number
}

export const DEFAULT_SHAPE: HostShape = { gpus: 16, qatPfs: 16, qatVfs: 8, nvmes: 16, generic: 16 }

/** The pci driver's options that match the generic functions (and nothing else). */
export const DRIVER_OPTIONS = {
  pci: { device_spec: '{"vendor_id": "1137", "product_id": "0071"}' },
}

/** Every built-in driver but `fake`: what an agent on such a host would enable. */
export const ENABLED_DRIVERS = [
  'nvidia-gpu',
  'intel-qat',
  'nvme-ssd',
  'pci',
  'intel-fpga',
  'xilinx-fpga',
  'intel-nic',
]

const hex2 = (n: number) => n.toString(16).padStart(2, '0')

async function put(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true })
  await writeFile(file, text)
}

/** Writes the host; returns the number of devices the drivers should find. */
export async function writeHostFixture(
  dir: string,
  shape: HostShape = DEFAULT_SHAPE,
): Promise<number> {
  const pci = path.join(dir, 'sys/bus/pci/devices')
  await mkdir(pci, { recursive: true })
  const lspciNnD: string[] = []
  const lspciNnkD: string[] = []
  const smi: string[] = []
  const fn = async (
    bdf: string,
    vendor: string,
    device: string,
    cls: string,
    extra: Record<string, string> = {},
  ) => {
    const files = {
      vendor: `0x${vendor}\n`,
      device: `0x${device}\n`,
      class: `0x${cls}\n`,
      ...extra,
    }
    await Promise.all(
      Object.entries(files).map(([name, text]) => put(path.join(pci, bdf, name), text)),
    )
  }
  const jobs: Promise<void>[] = []
  for (let i = 0; i < shape.gpus; i++) {
    const bdf = `0000:${hex2(0x10 + i)}:00.0`
    const types: Record<string, string> = {}
    ;[
      ['nvidia-222', 'GRID T4-1B', 8],
      ['nvidia-223', 'GRID T4-2B', 4],
      ['nvidia-230', 'GRID T4-4C', 2],
      ['nvidia-319', 'GRID T4-8Q', 1],
    ].forEach(([id, name, n]) => {
      types[`mdev_supported_types/${id}/name`] = `${name}\n`
      types[`mdev_supported_types/${id}/available_instances`] = `${n}\n`
    })
    jobs.push(fn(bdf, '10de', '1eb8', '030200', types))
    const line = `${bdf} 3D controller [0302]: NVIDIA Corporation TU104GL [Tesla T4] [10de:1eb8] (rev a1)`
    lspciNnD.push(line)
    lspciNnkD.push(line, '\tKernel driver in use: nvidia')
    smi.push(
      `\t<gpu id="0000${bdf.toUpperCase()}">\n\t\t<product_name>Tesla T4</product_name>\n` +
        `\t\t<uuid>GPU-${hex2(i)}000000-0000-4000-8000-000000000000</uuid>\n\t</gpu>`,
    )
  }
  for (let i = 0; i < shape.qatPfs; i++) {
    const bus = hex2(0x40 + i)
    const pf = `0000:${bus}:00.0`
    const vfs = Array.from(
      { length: shape.qatVfs },
      (_, j) => `0000:${bus}:${hex2(1 + Math.floor(j / 8))}.${j % 8}`,
    )
    const virtfn: Record<string, string> = { 'qat/cfg_services': 'sym;asym\n' }
    vfs.forEach(
      (vf, j) =>
        (virtfn[`virtfn${j}/uevent`] = `DRIVER=4xxxvf\nPCI_ID=8086:4941\nPCI_SLOT_NAME=${vf}\n`),
    )
    jobs.push(fn(pf, '8086', '4940', '0b4000', virtfn))
    for (const vf of vfs)
      jobs.push(
        fn(vf, '8086', '4941', '0b4000', { 'physfn/uevent': `DRIVER=4xxx\nPCI_SLOT_NAME=${pf}\n` }),
      )
    lspciNnkD.push(
      `${pf} Co-processor [0b40]: Intel Corporation 4xxx [8086:4940] (rev 40)`,
      '\tKernel driver in use: 4xxx',
    )
  }
  for (let i = 0; i < shape.nvmes; i++) {
    const bdf = `0000:${hex2(0x60 + i)}:00.0`
    jobs.push(fn(bdf, '144d', 'a80a', '010802'))
    const ctl = path.join(dir, `sys/class/nvme/nvme${i}`)
    const files = {
      model: 'Samsung SSD 980 PRO 1TB                 \n',
      serial: `S5GXNF0R${String(i).padStart(6, '0')}A    \n`,
      firmware_rev: '5B2QGXA7\n',
      'device/uevent': `DRIVER=nvme\nPCI_CLASS=10802\nPCI_ID=144D:A80A\nPCI_SLOT_NAME=${bdf}\n`,
      'device/vendor': '0x144d\n',
      'device/device': '0xa80a\n',
    }
    jobs.push(...Object.entries(files).map(([name, text]) => put(path.join(ctl, name), text)))
    lspciNnkD.push(
      `${bdf} Non-Volatile memory controller [0108]: Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3/980PRO [144d:a80a]`,
      '\tKernel driver in use: nvme',
    )
  }
  for (let i = 0; i < shape.generic; i++) {
    const bdf = `0000:${hex2(0x80 + i)}:00.0`
    jobs.push(fn(bdf, '1137', '0071', '0c0400'))
    lspciNnkD.push(
      `${bdf} Fibre Channel [0c04]: Cisco Systems Inc VIC FCoE HBA [1137:0071] (rev a2)`,
      '\tKernel driver in use: fnic',
    )
  }
  const smiXml = `<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t<attached_gpus>${shape.gpus}</attached_gpus>\n${smi.join('\n')}\n</nvidia_smi_log>\n`
  jobs.push(
    put(path.join(dir, 'lspci-nnD.txt'), `${lspciNnD.join('\n')}\n`),
    put(path.join(dir, 'lspci-nnkD.txt'), `${lspciNnkD.join('\n')}\n`),
    put(path.join(dir, 'nvidia-smi-q-x.xml'), smiXml),
    put(
      path.join(dir, 'commands.json'),
      JSON.stringify({
        'lspci -nnD': 'lspci-nnD.txt',
        'lspci -nnkD': 'lspci-nnkD.txt',
        'nvidia-smi -q -x': 'nvidia-smi-q-x.xml',
      }),
    ),
  )
  await Promise.all(jobs)
  return shape.gpus + shape.qatPfs + shape.nvmes + shape.generic
}

/** An empty host: an empty PCI tree and no recorded commands. */
export async function writeEmptyHost(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'sys/bus/pci/devices'), { recursive: true })
}
