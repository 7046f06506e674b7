/**
 * A HostProbe that remembers what it read until `reset()`. Several drivers walk the same PCI tree
 * (nvidia-gpu, intel-qat, intel-fpga, pci each read every function's vendor and device), so one
 * discovery reads each file once instead of once per driver. The agent resets it before every
 * discovery; any write forgets everything (a write may change what reads return). Commands are
 * never cached: they may have effects.
 */
import type { HostProbe } from '../driver.js'

export interface CachingHostProbe extends HostProbe {
  /** Forgets every read: the next ones go to the host. */
  reset(): void
}

export function createCachingHostProbe(probe: HostProbe): CachingHostProbe {
  let files = new Map<string, Promise<string>>()
  let dirs = new Map<string, Promise<string[]>>()
  let exists = new Map<string, Promise<boolean>>()
  const remember = <T>(
    cache: Map<string, Promise<T>>,
    key: string,
    read: () => Promise<T>,
  ): Promise<T> => {
    const hit = cache.get(key)
    if (hit) return hit
    const value = read()
    cache.set(key, value)
    return value
  }
  const reset = () => {
    files = new Map()
    dirs = new Map()
    exists = new Map()
  }
  return {
    reset,
    readFile: (path) => remember(files, path, () => probe.readFile(path)),
    // A copy each time: callers may sort or splice what they get.
    readDir: async (path) => [...(await remember(dirs, path, () => probe.readDir(path)))],
    exists: (path) => remember(exists, path, () => probe.exists(path)),
    exec: (command, args, options) => probe.exec(command, args, options),
    async writeFile(path, data) {
      reset()
      await probe.writeFile(path, data)
    },
  }
}
