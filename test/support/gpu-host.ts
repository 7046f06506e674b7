/**
 * A fake GPU host for multi-process tests: a copy of the nvidia-gpu/ecc fixture (two A100s) for
 * an agent's `[agent] host_root`, and a stand-in `nvidia-smi` on the agent's PATH that prints the
 * host's recorded `nvidia-smi -q -x` XML, which the test edits to change what the GPUs report.
 * This is the hardware's test double (recorded command output behind the HostProbe): the agent
 * itself runs unchanged and executes the command as it would on a real host.
 */
import { chmod, copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ROOT } from './service.js'
import { fixtureHost } from './fixture-host.js'

const FIXTURE = 'nvidia-gpu/ecc'

export interface GpuHost {
  host: string
  /** `[agent] host_root`. */
  root: string
  /** A directory to put first on the agent's PATH: it holds the stand-in `nvidia-smi`. */
  bin: string
  /** The XML the stand-in prints. */
  xml: string
  remove(): Promise<void>
}

/** A host named `host` whose two GPUs are healthy (no ECC errors). */
export async function gpuHost(host: string): Promise<GpuHost> {
  const fixture = await fixtureHost(host, FIXTURE)
  const bin = path.join(fixture.root, 'bin')
  const xml = path.join(fixture.root, 'nvidia-smi-q-x.xml')
  await mkdir(bin)
  await copyFile(path.join(ROOT, 'src/drivers/__fixtures__', FIXTURE, 'nvidia-smi-q-x.xml'), xml)
  await writeFile(path.join(bin, 'nvidia-smi'), `#!/bin/sh\nexec cat '${xml}'\n`)
  await chmod(path.join(bin, 'nvidia-smi'), 0o755)
  const gpu = { host, root: fixture.root, bin, xml, remove: fixture.remove }
  await setEccErrors(gpu, '0000:3b:00.0', 0)
  return gpu
}

/**
 * Sets the volatile and aggregate uncorrectable DRAM ECC counts of the GPU at `address` in the XML
 * the stand-in prints (written to a temp file and renamed, so a reader never sees half of it).
 */
export async function setEccErrors(gpu: GpuHost, address: string, count: number): Promise<void> {
  const text = await readFile(gpu.xml, 'utf8')
  const id = `<gpu id="0000${address.toUpperCase()}">`
  const start = text.indexOf(id)
  if (start < 0) throw new Error(`no ${id} in ${gpu.xml}`)
  const end = text.indexOf('</gpu>', start)
  const block = text
    .slice(start, end)
    .replace(
      /<dram_uncorrectable>\d+<\/dram_uncorrectable>/g,
      `<dram_uncorrectable>${count}</dram_uncorrectable>`,
    )
  const tmp = `${gpu.xml}.tmp`
  await writeFile(tmp, text.slice(0, start) + block + text.slice(end))
  await rename(tmp, gpu.xml)
}

/** The environment of a `cyborg up` whose agent reports `host` with the nvidia-gpu driver. */
export function gpuHostEnv(host: GpuHost): Record<string, string> {
  return {
    CYBORG_DEFAULT__HOST: host.host,
    CYBORG_AGENT__HOST_ROOT: host.root,
    CYBORG_AGENT__ENABLED_DRIVERS: 'nvidia-gpu',
    CYBORG_AGENT__AUTO_ACTIVATE: 'true',
    PATH: `${host.bin}:${process.env.PATH ?? ''}`,
  }
}
