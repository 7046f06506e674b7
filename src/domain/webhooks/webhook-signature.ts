/**
 * What a webhook delivery carries, after the Standard Webhooks convention
 * (https://www.standardwebhooks.com/, docs/webhooks.md): the JSON body, and the headers
 * `webhook-id` (the event's uuid, the same on every attempt), `webhook-timestamp` (unix seconds of
 * the attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * keyed by the decoded bytes of the endpoint's `whsec_` secret).
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'
/** Random bytes of a new secret (the convention asks for 24 to 64). */
const SECRET_BYTES = 32

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

/** The HMAC key of a `whsec_` secret: its base64 part, decoded. */
export function webhookKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('a webhook secret starts with whsec_')
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
}

/** An outbox event, as far as its delivery body needs it. */
export interface WebhookEvent {
  uuid: string
  eventType: string
  priority: string
  resourceType: string
  resourceUuid: string
  projectId: string | null
  payload: Record<string, unknown>
  createdAt: string
}

/**
 * The body posted for `event`: `{type, timestamp, data}` as the convention shapes it; `data`
 * holds the event's id, resource, project, priority and versioned payload.
 */
export function webhookBody(event: WebhookEvent): string {
  return JSON.stringify({
    type: event.eventType,
    timestamp: event.createdAt,
    data: {
      id: event.uuid,
      resource_type: event.resourceType,
      resource_uuid: event.resourceUuid,
      project_id: event.projectId,
      priority: event.priority,
      payload: event.payload,
    },
  })
}

/** Signs attempts for one endpoint: the headers of each, with the same id on every attempt. */
export type WebhookSigner = (id: string, at: Date, body: string) => Record<string, string>

/**
 * A signer for the endpoint whose secret is `secret`. The key is prepared once (a KeyObject):
 * handing createHmac the raw bytes prepares it again on every call, which profiling the
 * dispatcher showed costing more than the HMAC itself.
 */
export function webhookSigner(secret: string): WebhookSigner {
  const key: KeyObject = createSecretKey(webhookKey(secret))
  return (id, at, body) => {
    const timestamp = String(Math.floor(at.getTime() / 1000))
    const signature = createHmac('sha256', key)
      .update(`${id}.${timestamp}.${body}`)
      .digest('base64')
    return {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    }
  }
}

/** The headers of one attempt: the same id every time, this attempt's timestamp and signature. */
export function webhookHeaders(
  secret: string,
  id: string,
  at: Date,
  body: string,
): Record<string, string> {
  return webhookSigner(secret)(id, at, body)
}
