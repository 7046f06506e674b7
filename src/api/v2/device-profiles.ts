/**
 * Device profiles: `POST /device_profiles` (a list of exactly one profile, checked by its schema,
 * device-profile-body.ts, each group with a `resources:` key as in 17.0.0) → 201 bare profile;
 * `GET /device_profiles[?name=a,b]`; `GET /device_profiles/{uuid}` (by name from 2.2 on; a name
 * below 2.2 is 406) → `{device_profile: …}`; `DELETE /device_profiles/{uuid|name}` and
 * `DELETE /device_profiles?value=a,b` → 204, all or nothing.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  getDeviceProfile,
  getDeviceProfileByName,
  listDeviceProfiles,
  type DeviceProfileSortKey,
} from '../../db/reads/device-profile-reads.js'
import {
  normalizeDeviceProfile,
  requireResourceKeys,
  type DeviceProfile,
} from '../../domain/device-profile.js'
import { isUuidLike } from '../../domain/ids.js'
import { NotFoundError } from '../../domain/errors.js'
import { ApiError } from '../errors.js'
import { commaList, markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { Db } from '../types.js'
import type { V2Env } from './env.js'
import { DeviceProfileCreate, type DeviceProfileCreateBody } from './schemas/device-profile-body.js'
import * as docs from './schemas/device-profiles.js'
import { deviceProfileView } from './views.js'

/** By uuid when it looks like one, else (or when no uuid matches) by name. */
export async function resolveDeviceProfile(db: Db, value: string): Promise<DeviceProfile> {
  if (!isUuidLike(value)) return getDeviceProfileByName(db, value)
  try {
    return await getDeviceProfile(db, value.toLowerCase())
  } catch (err) {
    // Names may look like uuids ([a-zA-Z0-9-_]); try the name before giving up.
    if (err instanceof NotFoundError) return getDeviceProfileByName(db, value)
    throw err
  }
}

export function deviceProfileRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  /** Deletes every profile named (uuid or name) in the comma-separated `value`, or none. */
  const deleteProfiles = async (value: string, reply: FastifyReply) => {
    const wanted = commaList(value)!
    const profiles = await Promise.all(wanted.map((v) => resolveDeviceProfile(db, v)))
    await conductor.deleteDeviceProfiles({ uuids: [...new Set(profiles.map((p) => p.uuid))] })
    return reply.code(204).send()
  }

  resource(app, '/device_profiles', {
    GET: {
      policy: 'cyborg:device_profile:get_all',
      doc: docs.listDeviceProfiles,
      handler: async (request) => {
        const query = request.query as QueryOf<typeof docs.ListProfilesQuery>
        const names = commaList(query.name)
        const profiles = await listDeviceProfiles(db, {
          ...(names === undefined ? {} : { names }),
          ...pagingOf<DeviceProfileSortKey>(query),
        }).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        const base = baseUrl(request)
        return { device_profiles: profiles.map((p) => deviceProfileView(p, base)) }
      },
    },
    POST: {
      policy: 'cyborg:device_profile:create',
      doc: docs.createDeviceProfile,
      schema: { body: DeviceProfileCreate },
      handler: async (request, reply) => {
        const [item] = request.body as DeviceProfileCreateBody
        const wanted = normalizeDeviceProfile(item!)
        requireResourceKeys(wanted.groups)
        const profile = await conductor.createDeviceProfile(wanted)
        return reply.code(201).send(deviceProfileView(profile, baseUrl(request)))
      },
    },
    DELETE: {
      policy: 'cyborg:device_profile:delete',
      doc: docs.deleteDeviceProfiles,
      handler: async (request, reply) =>
        deleteProfiles((request.query as QueryOf<typeof docs.DeleteProfilesQuery>).value, reply),
    },
  })

  resource(app, '/device_profiles/:value', {
    GET: {
      policy: 'cyborg:device_profile:get_one',
      doc: docs.getDeviceProfile,
      handler: async (request: FastifyRequest) => {
        const { value } = request.params as { value: string }
        if (!isUuidLike(value) && request.apiMinor < 2) {
          throw new ApiError(
            406,
            `Getting a device profile by name needs microversion 2.2 or later (this request is at ` +
              `2.${request.apiMinor}); ${JSON.stringify(value)} is not a UUID`,
          )
        }
        return {
          device_profile: deviceProfileView(
            await resolveDeviceProfile(db, value),
            baseUrl(request),
          ),
        }
      },
    },
    DELETE: {
      policy: 'cyborg:device_profile:delete',
      doc: docs.deleteDeviceProfile,
      handler: async (request: FastifyRequest, reply) =>
        deleteProfiles((request.params as { value: string }).value, reply),
    },
  })
}
