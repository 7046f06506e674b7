/**
 * Webhooks (issue 16): HTTP endpoints an administrator registers to receive events
 * (docs/webhooks.md). This file holds what they are, which events an endpoint wants, the
 * validation of the API's bodies (every failure names its field), and the retry schedule.
 */
import { invalidField } from '../errors.js'
import type { AgentAction, ArqAction, DeviceAction, DriverAction } from '../events.js'

/** A registered endpoint, as the API shows it (never with its secret). */
export interface Webhook {
  uuid: string
  url: string
  /** Exact event types or prefix wildcards (`accelerator.arq.*`); empty: every event. */
  eventTypes: string[]
  /** Projects whose events it gets; empty: every event, those without a project included. */
  projectIds: string[]
  description: string | null
  enabled: boolean
  createdAt: string
  updatedAt: string | null
}

/** A new endpoint as the create answer shows it: the only time its secret is shown. */
export interface CreatedWebhook extends Webhook {
  /** `whsec_<base64>`: the HMAC key of every signature (docs/webhooks.md). */
  secret: string
}

/** A validated `POST /v2/webhooks` body. */
export interface NewWebhook {
  url: string
  eventTypes: string[]
  projectIds: string[]
  description: string | null
  enabled: boolean
}

/** A validated `PATCH /v2/webhooks/{uuid}` body: the fields to change. */
export type WebhookChanges = Partial<NewWebhook>

export const DeliveryState = {
  /** Waiting for its (next) attempt. */
  Pending: 'pending',
  /** A 2xx answered it. */
  Delivered: 'delivered',
  /** Every attempt failed (`[webhooks] max_attempts`): the dead letter. */
  Dead: 'dead',
} as const
export type DeliveryState = (typeof DeliveryState)[keyof typeof DeliveryState]
export const DELIVERY_STATES: readonly DeliveryState[] = Object.values(DeliveryState)

/** One event for one endpoint, as `GET /v2/webhooks/{uuid}/deliveries` shows it. */
export interface WebhookDelivery {
  /** The event's uuid: the `webhook-id` header, the same on every attempt. */
  eventUuid: string
  eventType: string
  state: DeliveryState
  /** Attempts made so far. */
  attempts: number
  /** When the next attempt is due (pending). */
  nextAttemptAt: string
  lastAttemptAt: string | null
  /** The HTTP status of the last attempt; null when it got none (timeout, connection error). */
  lastStatus: number | null
  /** Why the last attempt failed. */
  lastError: string | null
  createdAt: string
  /** When it was delivered or went dead. */
  finishedAt: string | null
}

const DEVICE_ACTIONS = [
  'added',
  'ready',
  'active',
  'error',
  'removed',
  'enabled',
  'disabled',
] as const satisfies readonly DeviceAction[]
const ARQ_ACTIONS = [
  'created',
  'bound',
  'bind_failed',
  'unbound',
  'unbind_failed',
  'deleted',
] as const satisfies readonly ArqAction[]
const DRIVER_ACTIONS = [
  'installed',
  'uninstalled',
  'updated',
] as const satisfies readonly DriverAction[]
const AGENT_ACTIONS = ['lease_lost', 'lease_regained'] as const satisfies readonly AgentAction[]
/** Fails to compile when src/domain/events.ts gains an action that is not listed above. */
type Missing<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never
const complete: [
  Missing<DeviceAction, (typeof DEVICE_ACTIONS)[number]>,
  Missing<ArqAction, (typeof ARQ_ACTIONS)[number]>,
  Missing<DriverAction, (typeof DRIVER_ACTIONS)[number]>,
  Missing<AgentAction, (typeof AGENT_ACTIONS)[number]>,
] = [true, true, true, true]
void complete

/** Every event type the conductor writes (docs/notifications.md, "Events"). */
export const EVENT_TYPES: readonly string[] = [
  ...DEVICE_ACTIONS.map((a) => `accelerator.device.${a}`),
  'accelerator.device.health_changed',
  'accelerator.device.cleaned',
  'accelerator.device.clean_failed',
  'accelerator.device.clean_overridden',
  'accelerator.device.configured',
  'accelerator.device.configure_failed',
  ...ARQ_ACTIONS.map((a) => `accelerator.arq.${a}`),
  'accelerator.deployable.programmed',
  'accelerator.deployable.program_failed',
  ...DRIVER_ACTIONS.map((a) => `accelerator.driver.${a}`),
  ...AGENT_ACTIONS.map((a) => `accelerator.agent.${a}`),
]
/** The prefixes a wildcard may name: `accelerator.*`, `accelerator.device.*`, … */
const WILDCARD_PREFIXES = new Set(
  EVENT_TYPES.flatMap((t) => {
    const [root, resource] = t.split('.')
    return [`${root}.`, `${root}.${resource}.`]
  }),
)

/** Whether `eventType` is one of `patterns` (exact, or `prefix.*`); an empty list takes all. */
export function eventTypeMatches(patterns: readonly string[], eventType: string): boolean {
  if (patterns.length === 0) return true
  return patterns.some((p) =>
    p.endsWith('.*') ? eventType.startsWith(p.slice(0, -1)) : p === eventType,
  )
}

/** Whether an endpoint wants an event of `eventType` about `projectId`'s resource. */
export function webhookWants(
  w: Pick<Webhook, 'eventTypes' | 'projectIds'>,
  event: { eventType: string; projectId: string | null },
): boolean {
  if (!eventTypeMatches(w.eventTypes, event.eventType)) return false
  if (w.projectIds.length === 0) return true
  return event.projectId !== null && w.projectIds.includes(event.projectId)
}

/** Longest URL and description accepted; most event types and projects per endpoint. */
export const WEBHOOK_URL_MAX = 2048
export const WEBHOOK_TEXT_MAX = 255
export const WEBHOOK_LIST_MAX = 64

const PROJECT_RE = /^[A-Za-z0-9_.-]{1,255}$/
const CREATE_FIELDS = ['url', 'event_types', 'project_ids', 'description', 'enabled']

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)

const describe = (v: unknown): string =>
  v === undefined ? 'nothing' : v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`

/**
 * An absolute http(s) URL with a host, without credentials, port 0 or fragment, at most 2048
 * characters, and already in the form the WHATWG URL parser gives it (issue 27): it is stored and
 * shown exactly as written, and posted to exactly that. A URL the parser would rewrite (an empty
 * authority `http:///h/x` read as `http://h/x`, `HTTP://H:80/a b`, `http://127.1/`, dot segments,
 * backslashes, blanks) is refused with the form it would take, for the operator to write instead.
 * Only an empty path is let through as written (`http://h:1` is posted to `/`).
 */
export function parseWebhookUrl(value: unknown, field = 'url'): string {
  if (typeof value !== 'string' || value === '')
    throw invalidField(field, `expected an http or https URL, got ${describe(value)}`)
  if (value.length > WEBHOOK_URL_MAX)
    throw invalidField(field, `at most ${WEBHOOK_URL_MAX} characters`)
  const shown = JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1]
  if (scheme === undefined) throw invalidField(field, `not an absolute http(s) URL: ${shown}`)
  if (!/^https?$/i.test(scheme))
    throw invalidField(field, `must be http or https, got ${scheme.slice(0, 20)}`)
  const authority = /^[A-Za-z]+:\/\/([^/?#\\]*)/.exec(value)?.[1]
  if (authority === undefined || authority === '')
    throw invalidField(field, `must name a host after ${scheme}:// (no empty authority): ${shown}`)
  if (authority.includes('@'))
    throw invalidField(field, 'must not carry a user name or password (it is shown in listings)')
  if (value.includes('#'))
    throw invalidField(field, 'must not have a #fragment (not even an empty one)')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalidField(field, `not a URL: ${shown}`)
  }
  if (url.port === '0') throw invalidField(field, 'port 0 is no port: 1 to 65535')
  const bare = !/^[A-Za-z]+:\/\/[^/?#]*[/?]/.test(value)
  if (url.href !== value && !(bare && url.href === `${value}/`))
    throw invalidField(
      field,
      `would be read as ${JSON.stringify(url.href.slice(0, 100))}, not as written; write it that way (a webhook's URL is stored and posted as written)`,
    )
  return value
}

/** A list of event types: known names, or wildcards `accelerator.*` / `accelerator.<resource>.*`. */
export function parseEventTypes(value: unknown, field = 'event_types'): string[] {
  const items = parseList(value, field)
  items.forEach((t, i) => {
    const ok = t.endsWith('.*') ? WILDCARD_PREFIXES.has(t.slice(0, -1)) : EVENT_TYPES.includes(t)
    if (!ok)
      throw invalidField(
        `${field}[${i}]`,
        `unknown event type ${JSON.stringify(t)}; give one of ${EVENT_TYPES.join(', ')}, or a prefix such as accelerator.arq.*`,
      )
  })
  return [...new Set(items)]
}

/** A list of project ids (letters, digits, `_.-`, up to 255 characters each). */
export function parseProjectIds(value: unknown, field = 'project_ids'): string[] {
  const items = parseList(value, field)
  items.forEach((p, i) => {
    if (!PROJECT_RE.test(p))
      throw invalidField(
        `${field}[${i}]`,
        `a project id is 1-255 letters, digits, '_', '.' or '-', got ${JSON.stringify(p)}`,
      )
  })
  return [...new Set(items)]
}

function parseList(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) throw invalidField(field, `expected a list, got ${describe(value)}`)
  if (value.length > WEBHOOK_LIST_MAX)
    throw invalidField(field, `at most ${WEBHOOK_LIST_MAX} items, got ${value.length}`)
  return value.map((v: unknown, i) => {
    if (typeof v !== 'string')
      throw invalidField(`${field}[${i}]`, `expected a string, got ${describe(v)}`)
    return v
  })
}

function parseDescription(value: unknown): string | null {
  if (value === null) return null
  if (typeof value !== 'string')
    throw invalidField('description', `expected a string or null, got ${describe(value)}`)
  if (value.length > WEBHOOK_TEXT_MAX)
    throw invalidField('description', `at most ${WEBHOOK_TEXT_MAX} characters`)
  return value
}

function parseEnabled(value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw invalidField('enabled', `expected true or false, got ${describe(value)}`)
  return value
}

function fieldsOf(body: unknown): Record<string, unknown> {
  if (!isPlainObject(body))
    throw invalidField('body', `expected a JSON object, got ${describe(body)}`)
  for (const key of Object.keys(body)) {
    if (!CREATE_FIELDS.includes(key))
      throw invalidField(key, `unknown field (allowed: ${CREATE_FIELDS.join(', ')})`)
  }
  return body
}

/** Validates `POST /v2/webhooks`: `{url, event_types?, project_ids?, description?, enabled?}`. */
export function parseWebhookCreate(body: unknown): NewWebhook {
  const b = fieldsOf(body)
  if (b.url === undefined) throw invalidField('url', 'required: the http(s) URL to post events to')
  return {
    url: parseWebhookUrl(b.url),
    eventTypes: b.event_types === undefined ? [] : parseEventTypes(b.event_types),
    projectIds: b.project_ids === undefined ? [] : parseProjectIds(b.project_ids),
    description: b.description === undefined ? null : parseDescription(b.description),
    enabled: b.enabled === undefined ? true : parseEnabled(b.enabled),
  }
}

/** Validates `PATCH /v2/webhooks/{uuid}`: the same fields, each optional, at least one. */
export function parseWebhookChanges(body: unknown): WebhookChanges {
  const b = fieldsOf(body)
  if (Object.keys(b).length === 0)
    throw invalidField('body', `name at least one field to change: ${CREATE_FIELDS.join(', ')}`)
  const out: WebhookChanges = {}
  if (b.url !== undefined) out.url = parseWebhookUrl(b.url)
  if (b.event_types !== undefined) out.eventTypes = parseEventTypes(b.event_types)
  if (b.project_ids !== undefined) out.projectIds = parseProjectIds(b.project_ids)
  if (b.description !== undefined) out.description = parseDescription(b.description)
  if (b.enabled !== undefined) out.enabled = parseEnabled(b.enabled)
  return out
}

/** How the dispatcher retries (`[webhooks]`), in milliseconds. */
export interface RetrySchedule {
  /** `backoff_seconds`: the first wait's upper bound. */
  baseMs: number
  /** `max_backoff_seconds`: no wait's upper bound exceeds it. */
  capMs: number
}

/**
 * The wait after the `failures`-th failed attempt in a row: exponential backoff with full jitter
 * (a uniform draw in [0, min(cap, base·2^(failures−1))]), so that receivers that failed together
 * are not retried together. `random` is in [0, 1).
 */
export function retryDelayMs(
  failures: number,
  { baseMs, capMs }: RetrySchedule,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40))
  return Math.floor(random() * ceiling)
}
