/**
 * `cyborg host list` (docs/health.md): each agent host with its lease state (up, or down since its
 * last beat) and its devices counted by health, from `GET /v1/status` and `GET /v2/devices` at 2.5.
 * Hosts with devices but no agent row are listed too (agent `none`). Exit 0 even when some are down:
 * that is what it is there to show.
 */
import type { Command } from 'commander'
import { action, client, col, type Row } from './client.js'
import { apiRequest } from './http.js'
import { print } from './output.js'

const HEALTH = ['ok', 'degraded', 'failed', 'unknown'] as const

const HOST_COLUMNS = [
  col('Host', 'hostname'),
  col('Agent', 'agent'),
  col('Devices', 'devices'),
  ...HEALTH.map((h) => col(h[0]!.toUpperCase() + h.slice(1), h)),
]

/** One row per host: its agent's state and its device counts by health. */
export function hostRows(services: Row[], devices: Row[]): Row[] {
  const hosts = new Map<string, Row>()
  const row = (hostname: string): Row => {
    let r = hosts.get(hostname)
    if (!r) {
      r = { hostname, agent: 'none', devices: 0, ...Object.fromEntries(HEALTH.map((h) => [h, 0])) }
      hosts.set(hostname, r)
    }
    return r
  }
  for (const s of services) {
    if (s.binary !== 'cyborg-agent') continue
    row(String(s.host)).agent = s.state === 'up' ? 'up' : `down since ${String(s.last_seen)}`
  }
  for (const d of devices) {
    const r = row(String(d.hostname))
    r.devices = Number(r.devices) + 1
    const health = String(d.health)
    r[health] = Number(r[health] ?? 0) + 1
  }
  return [...hosts.values()].sort((a, b) => String(a.hostname).localeCompare(String(b.hostname)))
}

export function registerHostCommands(program: Command): void {
  const host = program.command('host').description('compute hosts: their agent and device health')
  client(
    host.command('list').description('each host: agent up or down since when, devices by health'),
  ).action(
    action(async (f) => {
      const status = await apiRequest<{ services: Row[] }>(f, 'GET', '/v1/status')
      const listed = await apiRequest<{ devices: Row[] }>(f, 'GET', '/v2/devices', {
        version: '2.5',
      })
      const rows = hostRows(status.services, listed.devices)
      print(f.format, f.format === 'json' ? ({ hosts: rows } as Row) : rows, HOST_COLUMNS)
    }),
  )
}
