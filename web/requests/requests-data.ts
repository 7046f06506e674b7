/**
 * The Requests page's data: the accelerator requests (GET /v2/accelerator_requests at 2.10, whose
 * ARQ object carries `state_reason`), and the counts, filters and pages it draws, as pure functions.
 */
import { getJson } from '../api.js'

/** The v2 ARQ object at 2.10 (docs/api-v2.md, "Accelerator requests"). */
export interface Arq {
  uuid: string
  state: string
  device_profile_name: string
  device_profile_group_id: number
  hostname: string | null
  device_rp_uuid: string | null
  instance_uuid: string | null
  project_id: string | null
  attach_handle_type: string
  attach_handle_uuid: string | null
  attach_handle_info: Record<string, string>
  created_at: string
  updated_at: string | null
  state_reason?: string | null
  links?: { href: string; rel: string }[]
}

/** Every ARQ state, in the order of the state machine (docs/arqs.md). */
export const ARQ_STATES = [
  'Initial',
  'BindStarted',
  'Bound',
  'BindFailed',
  'Unbound',
  'UnbindFailed',
  'Deleting',
] as const

/** The states of a request that failed: they carry a reason. */
export const FAILED_STATES: readonly string[] = ['BindFailed', 'UnbindFailed']

/** Rows per page of the table. */
export const PAGE_SIZE = 50

/** The microversion whose ARQ object has `state_reason`. */
const MINOR = 10

/** Every request the caller may see (an admin: every project's), in one read. */
export async function loadArqs(): Promise<Arq[]> {
  return (await getJson<{ arqs: Arq[] }>('/v2/accelerator_requests', MINOR)).arqs
}

/** One request, all its fields. */
export async function loadArq(uuid: string): Promise<Arq> {
  return getJson<Arq>(`/v2/accelerator_requests/${encodeURIComponent(uuid)}`, MINOR)
}

/** The mark and word of a state: a failed one is `✕`, a bound one `✓` (never colour alone). */
export function stateMark(state: string): { icon: string; tone: string } {
  if (FAILED_STATES.includes(state)) return { icon: '✕', tone: 'bad' }
  if (state === 'Bound') return { icon: '✓', tone: 'ok' }
  return { icon: '•', tone: '' }
}

/** How many requests are in each state: every known state (0 too), then any other. */
export function countByState(arqs: Arq[]): [string, number][] {
  const counts = new Map<string, number>(ARQ_STATES.map((s) => [s, 0]))
  for (const a of arqs) counts.set(a.state, (counts.get(a.state) ?? 0) + 1)
  return [...counts.entries()]
}

/** The filters of the URL's query. */
export interface ArqFilter {
  state?: string
  project?: string
  instance?: string
  host?: string
}

/** The filter named by `query` (empty values are no filter). */
export function filterOf(query: URLSearchParams): ArqFilter {
  const get = (k: string) => query.get(k)?.trim() || undefined
  return {
    state: get('state'),
    project: get('project'),
    instance: get('instance'),
    host: get('host'),
  }
}

/** The requests that pass every filter; the instance matches by its start (a pasted prefix). */
export function applyFilter(arqs: Arq[], f: ArqFilter): Arq[] {
  const instance = f.instance?.toLowerCase()
  return arqs.filter(
    (a) =>
      (f.state === undefined || a.state === f.state) &&
      (f.project === undefined || (a.project_id ?? '') === f.project) &&
      (f.host === undefined || (a.hostname ?? '') === f.host) &&
      (instance === undefined || (a.instance_uuid ?? '').startsWith(instance)),
  )
}

/** The distinct non-empty values of `key`, sorted (the choices of a filter). */
export function valuesOf(arqs: Arq[], key: 'project_id' | 'hostname'): string[] {
  return [...new Set(arqs.map((a) => a[key] ?? '').filter((v) => v !== ''))].sort()
}

/** Page `n` (from 1, clamped) of `rows`, with the page count. */
export function pageOf<T>(rows: T[], n: number): { rows: T[]; page: number; pages: number } {
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE))
  const page = Math.min(Math.max(1, Number.isFinite(n) ? Math.floor(n) : 1), pages)
  return { rows: rows.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE), page, pages }
}
