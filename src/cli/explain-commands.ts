/**
 * `cyborg explain PROFILE [--host H]` (docs/explain.md): for each request group of a device
 * profile, every candidate deployable with the rule that rules it out or `fits`, from
 * `POST /v2/device_profiles/{name_or_uuid}/explain` at 2.6. One table per group.
 */
import type { Command } from 'commander'
import { action, client, col, type ClientFlags, type Row } from './client.js'
import { apiRequest } from './http.js'
import { print } from './output.js'

const COLUMNS = [
  col('Deployable', 'deployable_name'),
  col('Host', 'hostname'),
  col('Rule', 'rule'),
  col('Reason', 'reason'),
]

interface Explained {
  device_profile: { uuid: string; name: string }
  hostname: string | null
  groups: {
    group_id: number
    resource_class: string | null
    required_traits: string[]
    forbidden_traits: string[]
    fits: number
    candidates: Row[]
  }[]
}

/** The line above a group's table: `group 0: PGPU, requires CUSTOM_A, forbids CUSTOM_B: 1 fits`. */
export function groupHeading(g: Explained['groups'][number]): string {
  const parts = [g.resource_class ?? 'any resource class']
  if (g.required_traits.length > 0) parts.push(`requires ${g.required_traits.join(', ')}`)
  if (g.forbidden_traits.length > 0) parts.push(`forbids ${g.forbidden_traits.join(', ')}`)
  return `group ${g.group_id}: ${parts.join(', ')}: ${g.fits} of ${g.candidates.length} fit`
}

export function registerExplainCommands(program: Command): void {
  client(
    program
      .command('explain')
      .description('why each deployable fits a device profile, or the rule that stops it')
      .argument('<profile>', 'the device profile (name or uuid)')
      .option('--host <hostname>', 'only deployables on this host')
      .option(
        '--project <id>',
        "judge the quota rule for this project (admin; default: the caller's)",
      ),
  ).action(
    action<ClientFlags & { host?: string; project?: string }>(async (f, [profile]) => {
      const out = await apiRequest<Explained>(
        f,
        'POST',
        `/v2/device_profiles/${encodeURIComponent(profile!)}/explain`,
        {
          version: '2.6',
          body: {
            ...(f.host === undefined ? {} : { hostname: f.host }),
            ...(f.project === undefined ? {} : { project_id: f.project }),
          },
        },
      )
      if (f.format === 'json') {
        print(f.format, out as unknown as Row, COLUMNS)
        return
      }
      const where = out.hostname === null ? 'the fleet' : out.hostname
      process.stdout.write(`device profile ${out.device_profile.name} on ${where}\n`)
      for (const g of out.groups) {
        process.stdout.write(`\n${groupHeading(g)}\n`)
        print(f.format, g.candidates, COLUMNS)
      }
    }),
  )
}
