/**
 * `cyborg deployable program UUID IMAGE` and `cyborg device configure UUID --sriov-numvfs N |
 * --vgpu-type TYPE` (docs/fpga.md, docs/drivers.md): an admin reprograms or re-partitions hardware
 * while no unit of it is allocated or cleaning. Both wait for the answer, Placement included.
 */
import type { Command } from 'commander'
import { InvalidArgumentError } from 'commander'
import { apiRequest, CliError } from './http.js'
import { print } from './output.js'
import { action, client, type ClientFlags, type Row } from './client.js'

/** `POST /v2/devices/{uuid}/configure` appears at 2.8; the program call is at every version. */
const CONFIGURE_VERSION = '2.8'

type Layout = { sriov_numvfs?: number; vgpu_type?: string; vgpu_types?: string[] }

/** What `POST /v2/devices/{uuid}/configure` answers. */
export interface ConfigureAnswer {
  device: string
  operation: string
  changed: boolean
  previous: Layout
  applied: Layout
}

const describeLayout = (l: Layout): string =>
  [
    l.sriov_numvfs === undefined ? undefined : `${l.sriov_numvfs} VFs`,
    l.vgpu_type === undefined ? undefined : `vGPU type ${l.vgpu_type}`,
    l.vgpu_types === undefined ? undefined : `offers ${l.vgpu_types.join(', ') || 'no type'}`,
  ]
    .filter((s) => s !== undefined)
    .join(', ') || 'nothing to say'

/** `device configure`'s line for people. */
export function configureSummary(a: ConfigureAnswer): string {
  if (!a.changed) return `device ${a.device}: already ${describeLayout(a.applied)}; nothing changed`
  return `device ${a.device}: ${describeLayout(a.previous)} → ${describeLayout(a.applied)} (operation ${a.operation})`
}

const count = (value: string): number => {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('must be a whole number of VFs')
  return n
}

export function registerConfigure(device: Command): void {
  client(
    device
      .command('configure')
      .description(
        're-partition a device: its SR-IOV VF count or its vGPU type; refused while any unit is allocated or cleaning (admin)',
      )
      .argument('<uuid>', 'the device')
      .option('--sriov-numvfs <n>', 'the VFs the PF should have', count)
      .option('--vgpu-type <type>', 'the mdev type its vGPUs use (nvidia-471), or * for any'),
  ).action(
    action<ClientFlags & { sriovNumvfs?: number; vgpuType?: string }>(async (flags, [uuid]) => {
      if ((flags.sriovNumvfs === undefined) === (flags.vgpuType === undefined))
        throw new CliError('give exactly one of --sriov-numvfs and --vgpu-type')
      const body =
        flags.sriovNumvfs !== undefined
          ? { sriov_numvfs: flags.sriovNumvfs }
          : { vgpu_type: flags.vgpuType }
      const answer = await apiRequest<ConfigureAnswer>(
        flags,
        'POST',
        `/v2/devices/${encodeURIComponent(uuid!)}/configure`,
        { version: CONFIGURE_VERSION, body },
      )
      if (flags.format === 'json') print(flags.format, answer, [])
      else process.stdout.write(`${configureSummary(answer)}\n`)
    }),
  )
}

export function registerProgram(deployable: Command): void {
  client(
    deployable
      .command('program')
      .description(
        'program an FPGA deployable with a Glance image (hash and signature checked); refused while any unit is allocated or cleaning (admin)',
      )
      .argument('<uuid>', 'the deployable')
      .argument('<image>', 'the Glance image uuid'),
  ).action(
    action(async (flags, [uuid, image]) => {
      const body = [{ path: '/program', op: 'replace', value: [{ image_uuid: image }] }]
      const saved = await apiRequest<Row>(
        flags,
        'PATCH',
        `/v2/deployables/${encodeURIComponent(uuid!)}/program`,
        { body },
      )
      print(flags.format, saved, [])
    }),
  )
}
