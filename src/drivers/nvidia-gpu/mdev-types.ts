/**
 * Mediated device types of a PCI function, read from sysfs (Linux
 * Documentation/driver-api/vfio-mediated-device.rst:
 * `<function>/mdev_supported_types/<type>/{name,available_instances,devices/}`), for the NVIDIA
 * driver's discovery and its vGPU type configure.
 */
import type { HostProbe } from '../driver.js'
import { readDirOptional, readOptional } from '../pci/pci-sysfs.js'

/** One mediated device type of a PCI function. */
export interface MdevType {
  /** Directory name, e.g. `nvidia-471`. */
  id: string
  /** The `name` file, e.g. `GRID A100-4C`; undefined if unreadable. */
  name?: string
  /** `available_instances` + entries of `devices/`. */
  total: number
}

/** A non-negative integer file; undefined if it is not one. */
export function parseCount(text: string): number | undefined {
  const m = /^\s*(\d{1,9})\s*$/.exec(text)
  return m ? Number(m[1]) : undefined
}

/** The mdev types of the function at sysfs directory `dir`, by id; unreadable ones are skipped. */
export async function readMdevTypes(host: HostProbe, dir: string): Promise<MdevType[]> {
  const out: MdevType[] = []
  for (const id of (await readDirOptional(host, `${dir}/mdev_supported_types`)).sort()) {
    if (!/^[A-Za-z0-9_.-]+$/.test(id)) continue
    const base = `${dir}/mdev_supported_types/${id}`
    const [name, available, devices] = await Promise.all([
      readOptional(host, `${base}/name`),
      readOptional(host, `${base}/available_instances`),
      readDirOptional(host, `${base}/devices`),
    ])
    const free = available === undefined ? undefined : parseCount(available)
    if (free === undefined) continue
    const type: MdevType = { id, total: free + devices.length }
    const trimmed = name?.trim()
    if (trimmed) type.name = trimmed
    out.push(type)
  }
  return out
}
