/**
 * Device telemetry of the Intel FPGA driver (issue 16): the temperature and power the card's FPGA
 * Management Engine (FME) shows in sysfs, world-readable, below the PF in both layouts intel-fpga.ts
 * reads (the FMEs are found as for health, opae-health.ts `listFpgaNodes`):
 *
 * - upstream DFL (Linux Documentation/ABI/testing/sysfs-platform-dfl-fme, kernel ≥ 5.5): the FME's
 *   hwmon devices `dfl-fme.<M>/hwmon/hwmon<N>/`, told apart by their `name`: `dfl_fme_thermal`
 *   gives `temp1_input` (millidegrees Celsius), `dfl_fme_power` gives `power1_input` (microwatts);
 * - the out-of-tree OPAE driver (opae-sdk's sysfs names, `fpgainfo temp` and `power`):
 *   `intel-fpga-fme.<M>/thermal_mgmt/temperature` (°C) and `power_mgmt/consumed` (W).
 *
 * Cards without the thermal or power feature (or a kernel without their hwmon) give nothing.
 */
import type { HostProbe } from '../driver.js'
import type { DeviceSample, DeviceValues } from '../../domain/device-telemetry.js'
import { listFpgaNodes } from './opae-health.js'
import { PCI_DEVICES_ROOT, readDirOptional, readOptional } from '../pci/pci-sysfs.js'

/** A sysfs number (`38000`, `41`); undefined for anything else. */
export function parseSysfsNumber(text: string | undefined): number | undefined {
  const t = text?.trim()
  return t !== undefined && /^-?\d{1,15}$/.test(t) ? Number(t) : undefined
}

/** What one FME shows: a temperature in °C and a power in W. */
async function fmeValues(
  host: HostProbe,
  fme: { layout: 'dfl' | 'opae'; path: string },
): Promise<DeviceValues> {
  const values: DeviceValues = {}
  if (fme.layout === 'opae') {
    const [temp, power] = await Promise.all([
      readOptional(host, `${fme.path}/thermal_mgmt/temperature`),
      readOptional(host, `${fme.path}/power_mgmt/consumed`),
    ])
    const c = parseSysfsNumber(temp)
    const w = parseSysfsNumber(power)
    if (c !== undefined) values.temperature_celsius = c
    if (w !== undefined && w >= 0) values.power_watts = w
    return values
  }
  const hwmons = (await readDirOptional(host, `${fme.path}/hwmon`))
    .filter((n) => /^hwmon\d+$/.test(n))
    .sort()
  for (const hwmon of hwmons) {
    const dir = `${fme.path}/hwmon/${hwmon}`
    const name = (await readOptional(host, `${dir}/name`))?.trim()
    if (name === 'dfl_fme_thermal' && values.temperature_celsius === undefined) {
      const milli = parseSysfsNumber(await readOptional(host, `${dir}/temp1_input`))
      if (milli !== undefined) values.temperature_celsius = milli / 1000
    } else if (name === 'dfl_fme_power' && values.power_watts === undefined) {
      const micro = parseSysfsNumber(await readOptional(host, `${dir}/power1_input`))
      if (micro !== undefined && micro >= 0) values.power_watts = micro / 1_000_000
    }
  }
  return values
}

/** The sample of the card whose PF is `address`; undefined when its FME shows nothing. */
export async function readFpgaSample(
  host: HostProbe,
  address: string,
): Promise<DeviceSample | undefined> {
  const nodes = await listFpgaNodes(host, `${PCI_DEVICES_ROOT}/${address}`)
  const values: DeviceValues = {}
  for (const node of nodes) {
    if (node.kind !== 'fme') continue
    for (const [k, v] of Object.entries(await fmeValues(host, node)))
      if (!(k in values)) Object.assign(values, { [k]: v })
  }
  return Object.keys(values).length === 0 ? undefined : { controlPath: address, values }
}

/** The samples of the cards whose PFs are `addresses` (those discovery found), in their order. */
export async function readFpgaSamples(
  host: HostProbe,
  addresses: readonly string[],
  signal?: AbortSignal,
): Promise<DeviceSample[]> {
  const out: DeviceSample[] = []
  for (const address of addresses) {
    if (signal?.aborted) break
    const sample = await readFpgaSample(host, address)
    if (sample) out.push(sample)
  }
  return out
}
