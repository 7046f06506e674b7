/**
 * The Nova client: tells nova-compute that the accelerator requests (ARQs) of an instance are
 * resolved, with `accelerator-request-bound` external events (compute microversion 2.82). One POST
 * per call; 5xx, timeouts and lost connections are retried with backoff, a 4xx never.
 * What Nova answers is documented in docs/nova.md.
 */
import { ConfigError, UnavailableError } from '../domain/errors.js'
import { OpenStackHttpError, requestJson, type RequestAuth, type ServiceEndpoint } from './http.js'
import {
  keystoneSettings,
  serviceUserSession,
  type KeystoneSectionOptions,
  type ServiceUserOptions,
} from './service-auth.js'

/** The first compute microversion that accepts the `accelerator-request-bound` event. */
export const NOVA_MICROVERSION = '2.82'
export const ARQ_BOUND_EVENT = 'accelerator-request-bound'
const PATH = '/os-server-external-events'

export interface NovaSettings {
  /** Compute API base including the version path, e.g. http://nova:8774/v2.1. */
  endpoint: string
  /** `admin_token`: sent as X-Auth-Token. Undefined for auth_type = none. */
  token?: string
  /** Sent as X-Service-Token when set. */
  serviceToken?: string
  /** Keystone tokens (`auth_type = password`, `[service_user]`) and the catalog's compute endpoint. */
  auth?: RequestAuth
  timeoutMs: number
  /** Waits before each retry, in ms; its length is the number of retries. @default [500, 1000, 2000, 4000] */
  backoffMs?: number[]
  onCall?: ServiceEndpoint['onCall']
}

export interface ArqBoundEvent {
  instanceUuid: string
  arqUuid: string
  status: 'completed' | 'failed'
}

/**
 * `delivered`: Nova passed it to the instance's compute host (code 200). `not-waiting`: no compute
 * host waits for it: the server has no host yet (422) or Nova does not know it (404); nothing to
 * retry. `rejected`: anything else (e.g. 400, or a 4xx for the whole request).
 */
export type EventOutcome = 'delivered' | 'not-waiting' | 'rejected'

export interface ArqBoundEventResult extends ArqBoundEvent {
  outcome: EventOutcome
  /** Nova's per-event code, or the status of the whole answer when it has none. */
  code: number
}

export interface SendEventsResult {
  /** Nova's status for the request: 200, 207, or the 4xx it refused it with; 0 when nothing was sent. */
  httpStatus: number
  /** Requests made (1 + retries). */
  attempts: number
  events: ArqBoundEventResult[]
  /** True when no event was rejected. */
  ok: boolean
  /** Nova's answer when it refused the whole request (4xx), naming the service and the call. */
  error?: string
}

export interface NovaClient {
  readonly endpoint: string
  /**
   * Sends one `accelerator-request-bound` event per ARQ, in one request.
   * @throws UnavailableError when Nova gave a 5xx or no answer on every attempt
   */
  sendArqBoundEvents(events: ArqBoundEvent[]): Promise<SendEventsResult>
}

export function createNovaClient(settings: NovaSettings): NovaClient {
  const ep: ServiceEndpoint = {
    service: 'Nova',
    url: settings.endpoint.replace(/\/+$/, ''),
    headers: {
      'openstack-api-version': `compute ${NOVA_MICROVERSION}`,
      'x-openstack-nova-api-version': NOVA_MICROVERSION,
      ...(settings.token === undefined ? {} : { 'x-auth-token': settings.token }),
      ...(settings.serviceToken === undefined ? {} : { 'x-service-token': settings.serviceToken }),
    },
    timeoutMs: settings.timeoutMs,
    onCall: settings.onCall,
    auth: settings.auth,
  }
  const backoffMs = settings.backoffMs ?? [500, 1000, 2000, 4000]

  return {
    get endpoint() {
      return ep.url
    },
    async sendArqBoundEvents(events) {
      // Nova's schema requires at least one event.
      if (events.length === 0) return { httpStatus: 0, attempts: 0, events: [], ok: true }
      const body = {
        events: events.map((e) => ({
          name: ARQ_BOUND_EVENT,
          server_uuid: e.instanceUuid,
          tag: e.arqUuid,
          status: e.status,
        })),
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const answer = await requestJson(ep, 'POST', PATH, body)
          return finish(events, answer.status, answer.body, attempt)
        } catch (err) {
          if (err instanceof OpenStackHttpError) {
            const refused = events.map((e) => ({
              ...e,
              outcome: 'rejected' as const,
              code: err.status,
            }))
            return {
              httpStatus: err.status,
              attempts: attempt,
              events: refused,
              ok: false,
              error: err.message,
            }
          }
          if (!(err instanceof UnavailableError)) throw err
          if (attempt > backoffMs.length) {
            throw new UnavailableError(`${err.message} (gave up after ${attempt} attempts)`, {
              code: 'OPENSTACK_UNAVAILABLE',
              cause: err,
            })
          }
          await new Promise<void>((resolve) => setTimeout(resolve, backoffMs[attempt - 1]))
        }
      }
    },
  }
}

/** Reads each event's outcome from a 2xx answer. */
function finish(
  events: ArqBoundEvent[],
  status: number,
  body: unknown,
  attempts: number,
): SendEventsResult {
  const answered = (body as { events?: RawEvent[] } | null)?.events ?? []
  const results = events.map((e, i): ArqBoundEventResult => {
    if (status === 200) return { ...e, outcome: 'delivered', code: 200 }
    // Nova answers the events in the order sent; match on server and tag to be sure.
    const mine = (r: RawEvent | undefined) =>
      r?.server_uuid === e.instanceUuid && r.tag === e.arqUuid
    const raw = mine(answered[i]) ? answered[i] : answered.find(mine)
    const code = typeof raw?.code === 'number' ? raw.code : status
    return { ...e, outcome: outcomeOf(code), code }
  })
  return {
    httpStatus: status,
    attempts,
    events: results,
    ok: results.every((r) => r.outcome !== 'rejected'),
  }
}

function outcomeOf(code: number): EventOutcome {
  if (code === 200) return 'delivered'
  if (code === 422 || code === 404) return 'not-waiting'
  return 'rejected'
}

interface RawEvent {
  server_uuid?: string
  tag?: string
  code?: unknown
}

/** The `[nova]` options this client reads (a structural subset of the Config section). */
export interface NovaOptions extends Omit<KeystoneSectionOptions, 'timeout'> {
  /** Sent as X-Service-Token when set (and `[service_user]` sends none). */
  service_token?: string | undefined
  /** Seconds per answer. @default 30 */
  timeout?: number | undefined
}

/**
 * Settings from `[nova]` (and `[service_user]`), or null when Nova is not configured (no
 * endpoint_override and no auth: embedded mode, nobody to notify). The rules of every
 * keystoneauth-style section (`keystoneSettings`, catalog type `compute`), plus: an
 * endpoint_override must include the compute API version path.
 * @throws ConfigError naming the option at fault.
 */
export function novaSettings(
  opts: NovaOptions,
  serviceUser?: ServiceUserOptions,
): NovaSettings | null {
  const timeout = opts.timeout ?? 30
  const su = serviceUser ? serviceUserSession(serviceUser, timeout) : undefined
  const base = keystoneSettings('nova', { ...opts, timeout }, 'compute', su)
  if (!base) return null
  if (opts.endpoint_override && new URL(base.endpoint).pathname.replace(/\/+$/, '') === '') {
    throw new ConfigError(
      `[nova] endpoint_override must include the compute API version path, e.g. ${base.endpoint.replace(/\/+$/, '')}/v2.1`,
    )
  }
  return {
    endpoint: base.endpoint,
    ...(base.token === undefined ? {} : { token: base.token }),
    ...(opts.service_token ? { serviceToken: opts.service_token } : {}),
    ...(base.auth ? { auth: base.auth } : {}),
    timeoutMs: base.timeoutMs,
  }
}
