/**
 * Readable services of a deployable, derived from what its driver reported (docs/drivers.md): the
 * resource class, the traits and the loaded bitstream. Pure; one rule per driver family.
 *
 * | reported | services |
 * |---|---|
 * | `CUSTOM_QAT_SYM`, `_ASYM`, `_DC`, `_DCC` | `qat-sym`, `qat-asym`, `qat-dc`, `qat-dcc` |
 * | rc `VGPU` + `CUSTOM_NVIDIA_VGPU_<T>` | `vgpu:<T>` |
 * | rc `PGPU` | `gpu-passthrough` |
 * | `CUSTOM_FPGA_FUNCTION_ID_<V>_<ID>` / a bitstream / neither | `fpga-function:<ID>` / `fpga-bitstream:<id>` / `fpga` |
 * | `CUSTOM_NIC_PF` / `CUSTOM_NIC_VF` (+ `CUSTOM_<FUNCTION>`) | `nic-pf` / `nic-vf` (+ `nic-function:<FUNCTION>`) |
 * | rc `CUSTOM_SSD` | `nvme-ssd` |
 * | rc `CUSTOM_PCI` | `pci-passthrough` |
 * | anything else | the resource class in lower case |
 */

export interface DerivedService {
  /** A short stable id, e.g. `qat-sym`, `vgpu:T4_1B`. */
  service: string
  /** What it is, for people. */
  description: string
}

const QAT: Record<string, string> = {
  CUSTOM_QAT_SYM: 'symmetric cryptography (QAT)',
  CUSTOM_QAT_ASYM: 'asymmetric cryptography (QAT)',
  CUSTOM_QAT_DC: 'compression (QAT)',
  CUSTOM_QAT_DCC: 'chained compression (QAT)',
}

/** The services of one deployable: its resource class, its traits, and its bitstream if any. */
export function deriveServices(input: {
  rc: string | undefined
  traits: readonly string[]
  bitstreamId: string | null
  deviceType: string
}): DerivedService[] {
  const { traits, bitstreamId, deviceType } = input
  const rc = input.rc ?? deviceType
  const physnet = traits
    .find((t) => t.startsWith('CUSTOM_PHYSNET_'))
    ?.slice('CUSTOM_PHYSNET_'.length)
  const on = physnet ? ` on ${physnet.toLowerCase()}` : ''

  const qat = traits.filter((t) => Object.hasOwn(QAT, t))
  if (qat.length > 0)
    return qat.map((t) => ({
      service: `qat-${t.slice('CUSTOM_QAT_'.length).toLowerCase()}`,
      description: QAT[t]!,
    }))

  if (rc === 'VGPU') {
    const types = traits
      .filter((t) => t.startsWith('CUSTOM_NVIDIA_VGPU_'))
      .map((t) => t.slice('CUSTOM_NVIDIA_VGPU_'.length))
    if (types.length > 0)
      return types.map((t) => ({ service: `vgpu:${t}`, description: `NVIDIA vGPU type ${t}` }))
    return [{ service: 'vgpu', description: 'virtual GPU' }]
  }
  if (rc === 'PGPU') {
    const product = traits
      .find((t) => /^CUSTOM_NVIDIA_[0-9A-F]{4}$/.test(t))
      ?.slice('CUSTOM_NVIDIA_'.length)
    return [
      {
        service: 'gpu-passthrough',
        description: product
          ? `whole NVIDIA GPU ${product} (passthrough)`
          : 'whole GPU (passthrough)',
      },
    ]
  }
  if (rc === 'FPGA' || deviceType === 'FPGA') {
    const functions = traits
      .filter((t) => t.startsWith('CUSTOM_FPGA_FUNCTION_ID_'))
      .map((t) => t.slice('CUSTOM_FPGA_FUNCTION_ID_'.length))
    const out: DerivedService[] = functions.map((f) => {
      const id = f.replace(/^[A-Z]+_/, '')
      return {
        service: `fpga-function:${id}`,
        description: `FPGA function (accelerator function unit) ${id}`,
      }
    })
    if (bitstreamId)
      out.push({
        service: `fpga-bitstream:${bitstreamId}`,
        description: `FPGA programmed with bitstream ${bitstreamId}`,
      })
    if (out.length > 0) return out
    const fake = traits.includes('CUSTOM_FAKE_DEVICE')
    return [
      {
        service: 'fpga',
        description: fake
          ? 'fake FPGA (test driver), no function loaded'
          : 'FPGA, no function loaded',
      },
    ]
  }
  if (traits.includes('CUSTOM_NIC_PF') || traits.includes('CUSTOM_NIC_VF')) {
    const vf = traits.includes('CUSTOM_NIC_VF')
    const out: DerivedService[] = [
      {
        service: vf ? 'nic-vf' : 'nic-pf',
        description: `${vf ? 'SR-IOV virtual function' : 'physical NIC port'}${on}`,
      },
    ]
    const functions = traits.filter(
      (t) =>
        t.startsWith('CUSTOM_') && !t.startsWith('CUSTOM_NIC_') && !t.startsWith('CUSTOM_PHYSNET_'),
    )
    for (const f of functions)
      out.push({
        service: `nic-function:${f.slice('CUSTOM_'.length)}`,
        description: `NIC function ${f.slice('CUSTOM_'.length)}${on}`,
      })
    return out
  }
  if (rc === 'CUSTOM_SSD') return [{ service: 'nvme-ssd', description: 'NVMe SSD (passthrough)' }]
  if (rc === 'CUSTOM_PCI')
    return [{ service: 'pci-passthrough', description: `PCI function (passthrough)${on}` }]
  return [{ service: rc.toLowerCase(), description: `${deviceType} offering ${rc}` }]
}
