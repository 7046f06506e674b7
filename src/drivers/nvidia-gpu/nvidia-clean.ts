/**
 * Cleaning an NVIDIA GPU unit (docs/cleaning.md):
 *
 * - a vGPU (MDEV handle): its mdev is removed and created again with the same uuid and type
 *   (Linux Documentation/driver-api/vfio-mediated-device.rst: `/sys/bus/mdev/devices/<uuid>/remove`
 *   ← `1`, `<parent>/mdev_supported_types/<type>/create` ← uuid), so that the vGPU manager hands the
 *   next tenant a fresh vGPU; an mdev already gone is created and removed, leaving the host as found;
 * - a whole GPU that the NVIDIA host driver holds (listed by `nvidia-smi -q -x`): `nvidia-smi
 *   --gpu-reset -i <bus id>` (nvidia-smi(1); needs `-i`), only when `<processes>` lists no process;
 * - a GPU the host driver does not hold (bound to vfio-pci, an SR-IOV VF) or a host without
 *   nvidia-smi: a function-level reset through sysfs (pci-clean.ts).
 *
 * nvidia-smi exit codes (nvidia-smi(1) "RETURN VALUE"): 3 the operation is not available on the
 * target device and 13 NVML does not implement it are refusals (CLEAN_UNSUPPORTED); 9 (driver not
 * loaded) means no GPU is held by it, so the FLR applies.
 */
import type { HostProbe } from '../driver.js'
import {
  CleanErrorCode,
  CleanMethod,
  cleanError,
  evidenceLine,
  exitCodeOf,
  isCommandMissing,
  throwIfCleanAborted,
  type CleanCallOptions,
  type CleanResult,
  type CleanTarget,
  type VerifyResult,
} from '../clean.js'
import { pciFunctionReset, targetFunction, verifyPciFunction } from '../pci/pci-clean.js'
import { xmlSection } from './nvidia-smi.js'
import { formatPciAddress, parsePciAddress, readOptional } from '../pci/pci-sysfs.js'
import { errorMessage } from '../../domain/error-message.js'
import { isCanonicalUuid } from '../../domain/ids.js'

const DRIVER = 'nvidia-gpu'
/** Where the kernel lists mediated devices. */
export const MDEV_BUS_DEVICES = '/sys/bus/mdev/devices'
const MDEV_TYPE = /^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}$/

/** One GPU of `nvidia-smi -q -x`: its id as nvidia-smi prints it, and the processes running on it. */
export interface NvidiaSmiGpuUse {
  /** `00000000:3B:00.0`, as `-i` takes it. */
  id: string
  /** Canonical PCI address. */
  address: string
  /** `<pid> <process_name>` of each `<process_info>`. */
  processes: string[]
}

/** The GPUs of `nvidia-smi -q -x` with their processes (pure). */
export function parseNvidiaSmiProcesses(text: string): NvidiaSmiGpuUse[] {
  const out: NvidiaSmiGpuUse[] = []
  for (const m of text.matchAll(/<gpu\s+id="([^"]*)"\s*>([\s\S]*?)<\/gpu>/g)) {
    const pci = parsePciAddress(m[1]!)
    if (!pci) continue
    const section = xmlSection(m[2]!, 'processes') ?? ''
    const processes = [...section.matchAll(/<process_info>([\s\S]*?)<\/process_info>/g)].map(
      (p) => {
        const pid = /<pid>([^<]*)<\/pid>/.exec(p[1]!)?.[1]?.trim() ?? '?'
        const name = /<process_name>([^<]*)<\/process_name>/.exec(p[1]!)?.[1]?.trim() ?? '?'
        return `${pid} ${name}`
      },
    )
    out.push({ id: m[1]!, address: formatPciAddress(pci), processes })
  }
  return out
}

/** `nvidia-smi -q -x` → the GPUs, or undefined when nvidia-smi is not there to ask. */
async function queryGpus(host: HostProbe): Promise<NvidiaSmiGpuUse[] | undefined> {
  try {
    return parseNvidiaSmiProcesses(await host.exec('nvidia-smi', ['-q', '-x']))
  } catch (err) {
    if (isCommandMissing(err) || exitCodeOf(err) === 9) return undefined
    throw cleanError(
      DRIVER,
      CleanErrorCode.FAILED,
      `nvidia-smi -q -x failed: ${errorMessage(err)}`,
      {
        cause: err,
      },
    )
  }
}

/** Options of {@link createNvidiaCleanSteps}. */
export interface NvidiaCleanConfig {
  /** The sysfs PCI root. */
  root: string
  /** Whether nvidia-smi may be used (the driver's `nvidia_smi` option). */
  useNvidiaSmi: boolean
  /** Time limit given to `nvidia-smi --gpu-reset`. */
  timeoutMs: number
}

/** The nvidia-gpu driver's `clean` and `verify`. */
export function createNvidiaCleanSteps(host: HostProbe, config: NvidiaCleanConfig) {
  const { root, useNvidiaSmi, timeoutMs } = config

  const gpuReset = async (gpu: NvidiaSmiGpuUse, signal?: AbortSignal): Promise<CleanResult> => {
    if (gpu.processes.length > 0) {
      throw cleanError(
        DRIVER,
        CleanErrorCode.BUSY,
        `GPU ${gpu.address} is in use on the host (${gpu.processes.join(', ')})`,
        { details: { address: gpu.address, processes: gpu.processes } },
      )
    }
    throwIfCleanAborted(DRIVER, signal)
    const args = ['--gpu-reset', '-i', gpu.id]
    try {
      const out = await host.exec('nvidia-smi', args, { timeoutMs })
      return {
        method: CleanMethod.NVIDIA_GPU_RESET,
        evidence: `GPU ${gpu.address} idle\n${evidenceLine('nvidia-smi', args, out)}`,
        state: { address: gpu.address },
      }
    } catch (err) {
      const exit = exitCodeOf(err)
      const unsupported = isCommandMissing(err) || exit === 3 || exit === 13
      throw cleanError(
        DRIVER,
        unsupported ? CleanErrorCode.UNSUPPORTED : CleanErrorCode.FAILED,
        `nvidia-smi --gpu-reset of ${gpu.address} ${unsupported ? 'is not supported' : 'failed'}: ${errorMessage(err)}`,
        {
          details: { address: gpu.address, ...(exit === undefined ? {} : { exitCode: exit }) },
          cause: err,
        },
      )
    }
  }

  const mdevRecreate = async (target: CleanTarget, signal?: AbortSignal): Promise<CleanResult> => {
    const parent = targetFunction(DRIVER, target)
    const uuid = target.mdevUuid ?? ''
    const type = target.handle.info.asked_type ?? ''
    if (!isCanonicalUuid(uuid) || !MDEV_TYPE.test(type) || type.includes('..')) {
      throw cleanError(
        DRIVER,
        CleanErrorCode.TARGET_INVALID,
        'an MDEV unit needs the mdev uuid and its asked_type',
        { details: { uuid, type } },
      )
    }
    const typeDir = `${root}/${parent}/mdev_supported_types/${type}`
    if (!(await host.exists(`${typeDir}/create`))) {
      throw cleanError(
        DRIVER,
        CleanErrorCode.UNSUPPORTED,
        `PCI function ${parent} offers no mdev type ${type} (no ${typeDir}/create)`,
        { details: { parent, type } },
      )
    }
    const remove = `${MDEV_BUS_DEVICES}/${uuid}/remove`
    const present = await host.exists(`${MDEV_BUS_DEVICES}/${uuid}`)
    const writes: [string, string][] = present
      ? [
          [remove, '1'],
          [`${typeDir}/create`, uuid],
        ]
      : [
          [`${typeDir}/create`, uuid],
          [remove, '1'],
        ]
    for (const [path, data] of writes) {
      throwIfCleanAborted(DRIVER, signal)
      try {
        await host.writeFile(path, data)
      } catch (err) {
        throw cleanError(DRIVER, CleanErrorCode.FAILED, `writing ${path}: ${errorMessage(err)}`, {
          details: { uuid, path },
          cause: err,
        })
      }
    }
    return {
      method: CleanMethod.MDEV_RECREATE,
      evidence: [
        `mdev ${uuid} (${type} on ${parent}) ${present ? 'present' : 'absent'}`,
        ...writes.map(([p, d]) => `wrote ${d} to ${p}`),
      ].join('\n'),
      state: { address: parent, uuid, present: String(present) },
    }
  }

  return {
    async clean(target: CleanTarget, { signal }: CleanCallOptions = {}): Promise<CleanResult> {
      throwIfCleanAborted(DRIVER, signal)
      if (target.handle.type === 'MDEV') return mdevRecreate(target, signal)
      const address = targetFunction(DRIVER, target)
      const gpus = useNvidiaSmi ? await queryGpus(host) : undefined
      const gpu = gpus?.find((g) => g.address === address)
      if (gpu) return gpuReset(gpu, signal)
      // Not held by the NVIDIA host driver (vfio-pci, a VF) or no nvidia-smi: the function's FLR.
      const flr = await pciFunctionReset(host, DRIVER, address, {
        root,
        ...(signal ? { signal } : {}),
      })
      const why =
        gpus === undefined ? 'nvidia-smi not available' : `${address} not held by the NVIDIA driver`
      return { ...flr, evidence: `${why}\n${flr.evidence}` }
    },

    async verify(
      _target: CleanTarget,
      cleaned: CleanResult,
      { signal }: CleanCallOptions = {},
    ): Promise<VerifyResult> {
      const state = cleaned.state ?? {}
      const address = state.address ?? ''
      const fail = (problem: string) =>
        cleanError(
          DRIVER,
          CleanErrorCode.VERIFY_FAILED,
          `after the clean of ${address}: ${problem}`,
          {
            details: { state },
          },
        )
      throwIfCleanAborted(DRIVER, signal)
      if (cleaned.method === CleanMethod.MDEV_RECREATE) {
        const present = await host.exists(`${MDEV_BUS_DEVICES}/${state.uuid}`)
        if (present !== (state.present === 'true'))
          throw fail(`mdev ${state.uuid} is ${present ? 'still there' : 'missing'}`)
        if ((await readOptional(host, `${root}/${address}/vendor`)) === undefined)
          throw fail('the parent GPU is gone')
        return { evidence: `mdev ${state.uuid} ${present ? 'present' : 'absent'} as before` }
      }
      if (cleaned.method === CleanMethod.NVIDIA_GPU_RESET) {
        const gpu = (await queryGpus(host))?.find((g) => g.address === address)
        if (!gpu) throw fail('nvidia-smi does not list the GPU')
        if (gpu.processes.length > 0) throw fail(`processes on it: ${gpu.processes.join(', ')}`)
        return { evidence: `nvidia-smi lists ${gpu.id}, no processes` }
      }
      return verifyPciFunction(host, DRIVER, state, { root, ...(signal ? { signal } : {}) })
    },
  }
}

/** The default `clean_timeout` of nvidia-gpu, in seconds (a GPU reset takes seconds to a minute). */
export const NVIDIA_CLEAN_TIMEOUT_S = 300
