/**
 * `cyborg agent probe [--replay DIR] [--format table|json]` (docs/cli.md): what the agent would see
 * on this host (agent-probe.ts), printed as tables for people or as JSON for scripts. Exit 0 when
 * it ran, whatever the drivers found; a bad configuration or `--replay` is one line and exit 1.
 */
import { Option, type Command } from 'commander'
import type { DbCommandDeps } from './db-commands.js'
import type { ProbeReport } from './agent-probe.js'
import { renderTable } from '../../cli/output.js'
import { TOP_COLUMNS, topRows } from '../../cli/top-commands.js'
import { controlPathAddress } from '../../domain/inventory/inventory.js'

interface ProbeFlags {
  replay?: string
  format: 'table' | 'json'
}

/** Adds `probe` to the `agent` command. */
export function registerAgentProbe(agent: Command, deps: DbCommandDeps): Command {
  return agent
    .command('probe')
    .description(
      "run the enabled drivers' discovery, health and telemetry on this host, read-only, and print what the agent would report",
    )
    .option('--replay <dir>', 'look at a recording of scripts/record-host.sh instead of this host')
    .addOption(
      new Option('--format <format>', 'table for people, json for scripts')
        .choices(['table', 'json'])
        .default('table'),
    )
    .action(async (flags: ProbeFlags, command: Command) => {
      try {
        const config = deps.configFor(command)
        const { probeHost } = await import('./agent-probe.js')
        const report = await probeHost(config, { replay: flags.replay })
        process.stdout.write(
          flags.format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : renderProbe(report),
        )
      } catch (err) {
        deps.fail('agent probe', err)
      }
    })
}

const yesNo = (ok: boolean) => (ok ? 'yes' : 'no')

/** The report as text: drivers, inventory, health with its evidence, telemetry, host accesses. */
export function renderProbe(report: ProbeReport): string {
  const where =
    report.source.kind === 'host'
      ? `host ${report.host}, files under ${report.source.root}`
      : `host ${report.host}, replaying ${report.source.dir}`
  const devices = report.inventory.devices
  const deployables = devices.flatMap((d) =>
    d.deployables.map((dep) => ({ device: d, dep, address: controlPathAddress(d.controlPath) })),
  )
  const attr = (dep: (typeof deployables)[number]['dep'], key: string) =>
    dep.attributes
      .filter((a) => a.key === key || (key === 'trait' && a.key.startsWith('trait')))
      .map((a) => a.value)
      .join(',')
  const parts = [
    `cyborg agent probe: ${where} (read-only)\n`,
    'Drivers',
    renderTable(report.drivers, [
      { header: 'Driver', value: (d) => d.name },
      { header: 'OK', value: (d) => yesNo(d.ok) },
      { header: 'Devices', value: (d) => d.deviceCount },
      { header: 'Files', value: (d) => d.accesses.filter((a) => a.op !== 'exec').length },
      { header: 'Commands', value: (d) => d.accesses.filter((a) => a.op === 'exec').length },
      { header: 'ms', value: (d) => d.durationMs.toFixed(1) },
      { header: 'Error', value: (d) => d.error },
    ]),
    `Inventory (${devices.length} devices, hash ${report.inventory.hash.slice(0, 12)})`,
    renderTable(deployables, [
      { header: 'Device', value: (r) => r.address },
      { header: 'Type', value: (r) => r.device.type },
      { header: 'Vendor', value: (r) => r.device.vendor },
      { header: 'Model', value: (r) => r.device.model },
      { header: 'Deployable', value: (r) => r.dep.name },
      { header: 'RC', value: (r) => attr(r.dep, 'rc') },
      { header: 'Units', value: (r) => r.dep.numAccelerators },
      { header: 'Traits', value: (r) => attr(r.dep, 'trait') },
    ]),
    'Health',
    renderTable(report.health, [
      { header: 'Device', value: (h) => h.controlPath },
      { header: 'Driver', value: (h) => h.driver },
      { header: 'State', value: (h) => h.state },
      { header: 'Reason', value: (h) => h.reason },
    ]),
    ...report.health.map(
      (h) => `Evidence of ${h.controlPath}:\n${h.evidence.map((e) => `  ${e}\n`).join('')}`,
    ),
    'Telemetry',
    renderTable(
      topRows(
        report.telemetry.map((s) => {
          const device = devices.find((d) => controlPathAddress(d.controlPath) === s.controlPath)
          return {
            control_path: s.controlPath,
            type: device?.type,
            vendor: device?.vendor,
            values: s.values,
          }
        }),
      ),
      TOP_COLUMNS.filter((c) => c.header !== 'Host' && c.header !== 'Age'),
    ),
    'Host accesses',
    renderTable(
      report.drivers.flatMap((d) => d.accesses.map((a) => ({ driver: d.name, ...a }))),
      [
        { header: 'Driver', value: (a) => a.driver },
        { header: 'Op', value: (a) => a.op },
        { header: 'Target', value: (a) => a.target },
        { header: 'Outcome', value: (a) => a.outcome },
        { header: 'ms', value: (a) => a.ms.toFixed(3) },
      ],
    ),
  ]
  return parts.join('\n')
}
