/**
 * Helpers for the clean tests of every driver (not a test file itself): targets built from a PCI
 * address, and a probe wrapper that changes what the host answers after the clean's writes.
 */
import type { HostProbe } from './driver.js'
import type { CleanTarget } from './clean.js'
import { AttachType } from '../domain/inventory/inventory.js'
import { parsePciAddress } from './pci/pci-sysfs.js'
import { DriverError } from '../domain/errors.js'

/** A command that is not installed, as node-host-probe reports it. */
export const commandMissing = (command: string): DriverError =>
  new DriverError(`command not found: ${command}`, { code: 'COMMAND_NOT_FOUND' })

/** A command that exited with `exitCode`, as node-host-probe reports it. */
export const commandFailed = (command: string, exitCode: number, stderr = ''): DriverError =>
  new DriverError(`${command} failed (exit code ${exitCode}): ${stderr}`, {
    code: 'COMMAND_FAILED',
    details: { command, stderr, exitCode },
  })

/** A target whose control path and PCI handle are `handle` (and `controlPath`, default the same). */
export function pciTarget(handle: string, controlPath = handle): CleanTarget {
  return {
    controlPath: { type: 'PCI', info: parsePciAddress(controlPath)! },
    handle: { type: AttachType.PCI, info: { ...parsePciAddress(handle)! } },
  }
}

/** An MDEV target of `type` on `parent`, for the mdev with `uuid`. */
export function mdevTarget(parent: string, type: string, uuid?: string): CleanTarget {
  return {
    controlPath: { type: 'PCI', info: parsePciAddress(parent)! },
    handle: { type: AttachType.MDEV, info: { asked_type: type, ...parsePciAddress(parent)! } },
    ...(uuid === undefined ? {} : { mdevUuid: uuid }),
  }
}

/**
 * `host`, but reads of the paths in `files` answer their text (undefined: missing) and command
 * lines in `outputs` answer the next text of their list (the last one repeats): the host after a
 * clean, or a sanitize that is in progress then done. A command line (or a command name) in
 * `errors` fails with that error.
 */
export function overriddenProbe<T extends HostProbe>(
  host: T,
  files: Readonly<Record<string, string | undefined>> = {},
  outputs: Readonly<Record<string, readonly string[]>> = {},
  errors: Readonly<Record<string, Error>> = {},
): T {
  const calls = new Map<string, number>()
  return {
    ...host,
    readFile: (p: string) =>
      Object.hasOwn(files, p)
        ? files[p] === undefined
          ? Promise.reject(new Error(`ENOENT: ${p}`))
          : Promise.resolve(files[p]!)
        : host.readFile(p),
    exists: (p: string) =>
      Object.hasOwn(files, p) ? Promise.resolve(files[p] !== undefined) : host.exists(p),
    exec: (c: string, a: readonly string[], o?: Parameters<HostProbe['exec']>[2]) => {
      const line = [c, ...a].join(' ')
      const error = errors[line] ?? errors[c]
      if (error) {
        void host.exec(c, a, o).catch(() => undefined) // recorded in host.execs
        return Promise.reject(error)
      }
      const list = outputs[line]
      if (list === undefined) return host.exec(c, a, o)
      const n = calls.get(line) ?? 0
      calls.set(line, n + 1)
      void host.exec(c, a, o).catch(() => undefined) // recorded in host.execs
      return Promise.resolve(list[Math.min(n, list.length - 1)]!)
    },
  }
}
