/**
 * `[webhooks]` (docs/webhooks.md): how the conductor's webhook dispatcher sends, retries and keeps
 * deliveries. A section of the one option table in schema.ts, kept here for that file's size.
 * Every one is mutable: a SIGHUP applies it to the running dispatcher (src/main/reload.ts).
 */
import { int } from './options.js'

export const webhookOptions = {
  timeout_seconds: int({
    default: 10,
    min: 1,
    mutable: true,
    max: 300,
    help:
      'Seconds a webhook receiver has to answer one delivery (docs/webhooks.md); an answer not ' +
      'complete by then (status line, headers and body, of which at most 64 KiB is read) is a ' +
      'failed attempt. The conductor always runs the webhook dispatcher: it posts only to ' +
      'endpoints an admin registered (POST /v2/webhooks).',
  }),
  concurrency: int({
    default: 8,
    min: 1,
    mutable: true,
    max: 256,
    help: 'Endpoints each conductor posts to at once.',
  }),
  max_in_flight: int({
    default: 64,
    min: 1,
    mutable: true,
    max: 256,
    help:
      'Deliveries in flight at once to one endpoint, oldest first and never two about the same ' +
      "resource, so each resource's events arrive in order; 1 sends strictly one at a time in " +
      'queue order.',
  }),
  max_attempts: int({
    default: 8,
    min: 1,
    mutable: true,
    max: 100,
    help: 'Attempts of one delivery before it is dead (the dead letter, GET /v2/webhooks/{uuid}/deliveries?state=dead) and the next one goes.',
  }),
  backoff_seconds: int({
    default: 1,
    min: 1,
    mutable: true,
    help:
      'Upper bound of the wait before the first retry; it doubles with each failure ' +
      '(exponential backoff, full jitter: the wait is drawn between 0 and the bound).',
  }),
  max_backoff_seconds: int({
    default: 300,
    min: 1,
    mutable: true,
    help: 'No retry waits longer than this.',
  }),
  retention_hours: int({
    default: 24,
    min: 1,
    mutable: true,
    help: 'Hours delivered rows are kept (GET /v2/webhooks/{uuid}/deliveries) before they are deleted. Dead ones stay until their webhook is deleted.',
  }),
}
