/**
 * The drivers' options from cyborg.conf: `[pci] device_spec`, `[gpu_devices]`, `[nic_devices]`,
 * and each driver's health thresholds in the section named after it (`[nvidia_gpu]`, `[nvme_ssd]`,
 * …; docs/health.md). Every driver is built once here with its options, so that a bad value stops
 * the process in config's words (file, line, option) instead of when the agent starts its drivers.
 */
import { optionError, type Config } from '../config/config.js'
import type { schema } from '../config/schema.js'
import { ConfigError } from '../domain/errors.js'
import { DRIVER_ALIASES, DRIVERS, driverNames, type DriverName } from '../drivers/index.js'
import type { HostProbe } from '../drivers/driver.js'
import { errorMessage } from '../domain/error-message.js'

/** Driver → the section holding its health thresholds. */
const HEALTH_SECTIONS = {
  pci: 'pci',
  'nvidia-gpu': 'nvidia_gpu',
  'nvme-ssd': 'nvme_ssd',
  'intel-fpga': 'intel_fpga',
  'xilinx-fpga': 'xilinx_fpga',
  'intel-qat': 'intel_qat',
  'intel-nic': 'intel_nic',
} as const satisfies Partial<Record<keyof typeof DRIVERS, keyof typeof schema>>

/** Options of a section that are not health thresholds (mapped by hand below). */
const NOT_HEALTH = new Set(['device_spec'])

/** A probe that is never called: building a driver reads nothing. */
const unusedProbe: HostProbe = {
  readFile: () => Promise.reject(new Error('unused')),
  readDir: () => Promise.reject(new Error('unused')),
  exists: () => Promise.resolve(false),
  exec: () => Promise.reject(new Error('unused')),
  writeFile: () => Promise.reject(new Error('unused')),
}

/** @throws ConfigError naming the file, line and option of a value a driver refuses */
export function driverOptions(config: Config): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {
    pci: { device_spec: config.pci.device_spec ?? '' },
    'nvidia-gpu': { vgpu_types: config.gpu_devices.enabled_vgpu_types.join(',') },
    'intel-nic': {},
  }
  const nic = config.nic_devices
  if (nic.physical_device_mappings !== undefined)
    out['intel-nic']!.physical_device_mappings = nic.physical_device_mappings
  if (nic.function_device_mappings !== undefined)
    out['intel-nic']!.function_device_mappings = nic.function_device_mappings
  const origin = new Map<string, [string, string]>([['pci.device_spec', ['pci', 'device_spec']]])
  for (const [driver, section] of Object.entries(HEALTH_SECTIONS)) {
    const values = config[section] as Readonly<Record<string, string | undefined>>
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined || NOT_HEALTH.has(name)) continue
      ;(out[driver] ??= {})[name] = value
      origin.set(`${driver}.${name}`, [section, name])
    }
  }
  for (const [driver, options] of Object.entries(out)) {
    try {
      DRIVERS[driver as keyof typeof DRIVERS]({ host: unusedProbe, hostname: 'check' }, options)
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      const option = optionOf(err, driver)
      const where = option === undefined ? undefined : origin.get(`${driver}.${option}`)
      if (where === undefined) throw err
      const message = errorMessage(err).replace(`${driver} driver option ${option}: `, '')
      throw optionError(config, where[0] as keyof typeof schema, where[1], message)
    }
  }
  return out
}

/**
 * The drivers of `[agent] enabled_drivers` by their names (OpenStack Cyborg's aliases resolved),
 * each once, in order.
 * @throws ConfigError naming the file and line of `[agent] enabled_drivers` for an unknown driver
 */
export function enabledDriverNames(config: Config): DriverName[] {
  const known = driverNames()
  const names: DriverName[] = []
  for (const name of config.agent.enabled_drivers) {
    const resolved = Object.hasOwn(DRIVERS, name)
      ? (name as DriverName)
      : Object.hasOwn(DRIVER_ALIASES, name)
        ? DRIVER_ALIASES[name]
        : undefined
    if (resolved === undefined)
      throw optionError(
        config,
        'agent',
        'enabled_drivers',
        `unknown driver "${name}"; possible values are: ${known.join(', ')}`,
      )
    if (!names.includes(resolved)) names.push(resolved)
  }
  return names
}

/** The option a driver's ConfigError names (details.option, or `<driver> driver option <name>:`). */
function optionOf(err: ConfigError, driver: string): string | undefined {
  const named = (err.details as { option?: unknown } | undefined)?.option
  if (typeof named === 'string') return named
  return new RegExp(`^${driver} driver option (\\w+):`).exec(err.message)?.[1]
}
