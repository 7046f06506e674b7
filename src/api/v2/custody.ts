/**
 * The custody ledger (2.8, docs/custody.md): `GET /custody[?device_uuid&project_id&instance_uuid&
 * kind&since&until&limit&marker&sort_key&sort_dir]` and `GET /custody/{uuid}`, read from the
 * database. An admin sees every record; anyone else only their own project's (naming another
 * project is a 403; another project's record is a 404, as an unknown one). Below 2.8 both routes
 * are a 404 naming the microversion they need.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { getCustody, listCustody, type CustodySortKey } from '../../db/reads/custody-reads.js'
import type { StoredCustodyRecord } from '../../db/reads/custody-rows.js'
import { NotFoundError } from '../../domain/errors.js'
import { refuseOtherProject } from '../../domain/request-context.js'
import { isUuidLike } from '../../domain/ids.js'
import { markerNotFoundToInvalid, pagingOf, timeQuery } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import * as docs from './schemas/custody.js'

/** A page when the caller names no limit. */
const DEFAULT_LIMIT = 1000

export function custodyView(r: StoredCustodyRecord) {
  return {
    uuid: r.uuid,
    seq: r.seq,
    prev_hash: r.prevHash,
    hash: r.hash,
    kind: r.kind,
    allocation_uuid: r.allocationUuid,
    arq_uuid: r.arqUuid,
    device_uuid: r.deviceUuid,
    deployable_uuid: r.deployableUuid,
    handle_uuid: r.handleUuid,
    device_serial: r.deviceSerial,
    hostname: r.hostname,
    project_id: r.projectId,
    user_id: r.userId,
    instance_uuid: r.instanceUuid,
    allocated_via: r.allocatedVia,
    bound_at: r.boundAt,
    released_at: r.releasedAt,
    clean_method: r.cleanMethod,
    clean_result: r.cleanResult,
    clean_evidence_sha256: r.cleanEvidenceSha256,
    cleaned_at: r.cleanedAt,
    detail: r.detail,
    created_at: r.createdAt,
  }
}

const notFound = (uuid: string) =>
  new NotFoundError(`custody record ${uuid} not found`, {
    code: 'CUSTODY_RECORD_NOT_FOUND',
    details: { uuid },
  })

/** The project a non-admin's read is held to (undefined: an admin, no restriction). */
function ownProject(request: FastifyRequest, asked: string | undefined): string | undefined {
  const { ctx } = request
  if (ctx.isAdmin) return asked
  refuseOtherProject(ctx, asked, 'read the custody records')
  return ctx.projectId ?? ''
}

export function custodyRoutes(app: FastifyInstance, { db }: V2Env): void {
  resource(app, '/custody', {
    GET: {
      policy: 'cyborg:custody:get_all',
      doc: docs.listCustody,
      since: 8,
      handler: async (request) => {
        const q = request.query as QueryOf<typeof docs.ListCustodyQuery>
        const records = await listCustody(db, {
          deviceUuid: q.device_uuid?.toLowerCase(),
          projectId: ownProject(request, q.project_id),
          instanceUuid: q.instance_uuid,
          kind: q.kind,
          since: timeQuery(q.since, 'since'),
          until: timeQuery(q.until, 'until'),
          limit: DEFAULT_LIMIT,
          ...pagingOf<CustodySortKey>(q),
        }).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        return { custody_records: records.map(custodyView) }
      },
    },
  })

  resource(app, '/custody/:uuid', {
    GET: {
      policy: 'cyborg:custody:get_one',
      doc: docs.getCustody,
      since: 8,
      handler: async (request) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const record = await getCustody(db, uuid.toLowerCase())
        const own = ownProject(request, undefined)
        if (own !== undefined && record.projectId !== own) throw notFound(uuid)
        return custodyView(record)
      },
    },
  })
}
