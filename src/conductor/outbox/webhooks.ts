/**
 * The webhook writes of ConductorRpc 1.5 (docs/webhooks.md): register, change and delete an
 * endpoint. Each re-checks its input with the domain's parsers (the API checked it first) and runs
 * as one write of the group committer. The secret is made here and returned by create only.
 */
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { createWebhook, deleteWebhook, updateWebhook } from '../../db/outbox/webhooks.js'
import { invalidField } from '../../domain/errors.js'
import type { Logger } from '../../domain/logger.js'
import { newWebhookSecret } from '../../domain/webhooks/webhook-signature.js'
import {
  parseEventTypes,
  parseProjectIds,
  parseWebhookUrl,
  type WebhookChanges,
} from '../../domain/webhooks/webhooks.js'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import { checkUuidRequest } from '../validate.js'

export interface WebhookWriteDeps {
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  now: () => string
  uuid: () => string
  /** @default newWebhookSecret */
  secret?: () => string
}

type WebhookWrites = Pick<ConductorRpc, 'createWebhook' | 'updateWebhook' | 'deleteWebhook'>

function checkDescription(value: unknown): string | null {
  if (value === null) return null
  if (typeof value !== 'string' || value.length > 255)
    throw invalidField('description', 'expected a string of at most 255 characters, or null')
  return value
}

function checkEnabled(value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidField('enabled', 'expected true or false')
  return value
}

/** The changes of an update, re-checked; undefined fields stay as they are. */
function checkChanges(req: WebhookChanges): WebhookChanges {
  const out: WebhookChanges = {}
  if (req.url !== undefined) out.url = parseWebhookUrl(req.url)
  if (req.eventTypes !== undefined) out.eventTypes = parseEventTypes(req.eventTypes, 'eventTypes')
  if (req.projectIds !== undefined) out.projectIds = parseProjectIds(req.projectIds, 'projectIds')
  if (req.description !== undefined) out.description = checkDescription(req.description)
  if (req.enabled !== undefined) out.enabled = checkEnabled(req.enabled)
  return out
}

export function createWebhookWrites(deps: WebhookWriteDeps): WebhookWrites {
  const { committer, log, now, uuid, secret = newWebhookSecret } = deps
  return {
    async createWebhook(req) {
      const input = {
        url: parseWebhookUrl(req?.url),
        eventTypes: parseEventTypes(req.eventTypes ?? [], 'eventTypes'),
        projectIds: parseProjectIds(req.projectIds ?? [], 'projectIds'),
        description: req.description === undefined ? null : checkDescription(req.description),
        enabled: req.enabled === undefined ? true : checkEnabled(req.enabled),
        uuid: uuid(),
        secret: secret(),
        createdAt: now(),
      }
      const created = await committer.run((trx) => createWebhook(trx, input))
      log.info(
        { webhook: created.uuid, url: created.url, eventTypes: created.eventTypes },
        'webhook registered',
      )
      return { ...created, secret: input.secret }
    },

    async updateWebhook(req) {
      const webhook = checkUuidRequest(req).uuid.toLowerCase()
      const changes = checkChanges(req)
      const updated = await committer.run((trx) => updateWebhook(trx, webhook, changes, now()))
      log.info({ webhook, changed: Object.keys(changes) }, 'webhook changed')
      return updated
    },

    async deleteWebhook(req) {
      const webhook = checkUuidRequest(req).uuid.toLowerCase()
      await committer.run((trx) => deleteWebhook(trx, webhook))
      log.info({ webhook }, 'webhook deleted')
    },
  }
}
