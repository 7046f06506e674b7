/**
 * The Explain page's data: the device profiles (GET /v2/device_profiles), the hosts that have
 * devices (GET /v2/devices' hostnames), and one explain (POST
 * /v2/device_profiles/{name_or_uuid}/explain at 2.6, docs/explain.md).
 */
import { getJson, sendJson } from '../api.js'

export interface Profile {
  uuid: string
  name: string
  description?: string | null
  groups: Record<string, string>[]
}

export interface Candidate {
  deployable_uuid: string
  deployable_name: string
  hostname: string
  device_uuid: string
  /** `fits`, or the first rule that rules it out. */
  rule: string
  reason: string
  free_units: number
  placement?: 'offered' | 'not_offered' | null
  placement_reason?: string | null
}

export interface ExplainGroup {
  group_id: number
  resource_class: string | null
  required_traits: string[]
  forbidden_traits: string[]
  fits: number
  candidates: Candidate[]
}

export interface Explained {
  device_profile: { uuid: string; name: string }
  hostname: string | null
  project_id: string | null
  placement: { configured: boolean; error?: string; note?: string } | null
  groups: ExplainGroup[]
}

/** What the form chooses from: the profiles by name, the hosts with devices. */
export interface Choices {
  profiles: Profile[]
  hosts: string[]
}

/**
 * The profiles, and the hosts to suggest: those of the devices the caller may list (none when
 * policy refuses the devices: the host is then typed).
 */
export async function loadChoices(): Promise<Choices> {
  const [profiles, devices] = await Promise.all([
    getJson<{ device_profiles: Profile[] }>('/v2/device_profiles'),
    getJson<{ devices: { hostname: string }[] }>('/v2/devices').catch(() => ({ devices: [] })),
  ])
  return {
    profiles: [...profiles.device_profiles].sort((a, b) => a.name.localeCompare(b.name)),
    hosts: [...new Set(devices.devices.map((d) => d.hostname))].sort(),
  }
}

/** Explains `profile` (a name or uuid) on `host`, or over the fleet when there is none. */
export async function explain(profile: string, host: string | undefined): Promise<Explained> {
  const body = host === undefined ? {} : { hostname: host }
  const path = `/v2/device_profiles/${encodeURIComponent(profile)}/explain`
  const answer = await sendJson<Explained>('POST', path, body, 6)
  if (answer === null) throw new Error(`${path}: the API answered no body`)
  return answer
}

/** A group's title: its resource class and traits, in words. */
export function groupTitle(g: ExplainGroup): string {
  const parts = [g.resource_class ?? 'any resource class']
  if (g.required_traits.length > 0) parts.push(`requires ${g.required_traits.join(', ')}`)
  if (g.forbidden_traits.length > 0) parts.push(`forbids ${g.forbidden_traits.join(', ')}`)
  return `Group ${g.group_id}: ${parts.join('; ')}`
}

/** The mark of a verdict: `✓ fits`, or `✕ <rule>` (icon and word, never colour alone). */
export function verdictMark(rule: string): { icon: string; word: string; tone: string } {
  return rule === 'fits'
    ? { icon: '✓', word: 'fits', tone: 'ok' }
    : { icon: '✕', word: rule.replace(/_/g, ' '), tone: 'bad' }
}

/** What Placement says of a candidate, in words. */
export function placementWord(c: Candidate): string {
  if (c.placement === 'offered') return 'offered'
  if (c.placement === 'not_offered') return 'not offered'
  return '—'
}
