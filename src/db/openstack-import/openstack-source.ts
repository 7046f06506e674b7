/**
 * Reads a live OpenStack Cyborg database (MariaDB/MySQL or PostgreSQL) for
 * `cyborg db import-openstack`: its alembic revision (refused unless supported,
 * src/domain/openstack-import/openstack-cyborg.ts) and every row the import brings over, in one repeatable-read
 * transaction, so the tables agree with each other even while something still writes. Reads only.
 * Timestamps stay text (naive UTC, as stored): no driver turns them into local-time Dates.
 */
import { Kysely, MysqlDialect, PostgresDialect, type Dialect } from 'kysely'
import pg from 'pg'
import { createPool } from 'mysql2'
import { InvalidInputError, UnavailableError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import {
  openStackRevision,
  type OpenStackRevision,
  type OpenStackSnapshot,
} from '../../domain/openstack-import/openstack-cyborg.js'
import { parseConnectionUrl, redactUrl } from '../core/connection.js'

type Ts = string | null
interface Stamped {
  id: number
  uuid: string
  created_at: Ts
  updated_at: Ts
}

/** OpenStack Cyborg's tables, as models.py defines them (the columns read). */
interface OpenStackTables {
  alembic_version: { version_num: string }
  devices: Stamped & {
    type: string
    vendor: string
    model: string
    std_board_info: string | null
    vendor_board_info: string | null
    hostname: string
    status: string
    device_state: string | null
  }
  controlpath_ids: Stamped & { device_id: number; cpid_type: string; cpid_info: string }
  deployables: Stamped & {
    parent_id: number | null
    root_id: number | null
    name: string
    num_accelerators: number
    device_id: number
    rp_uuid: string | null
    driver_name: string | null
    bitstream_id: string | null
  }
  attributes: Stamped & { deployable_id: number; key: string; value: string }
  attach_handles: Stamped & {
    deployable_id: number
    cpid_id: number
    in_use: number | boolean | null
    attach_type: string
    attach_info: string
  }
  device_profiles: Stamped & { name: string; profile_json: string; description: string | null }
  extended_accelerator_requests: Stamped & {
    project_id: string | null
    state: string
    device_profile_id: number
    device_profile_group_id: number
    hostname: string | null
    device_rp_uuid: string | null
    instance_uuid: string | null
    attach_handle_id: number | null
    deployable_id: number | null
  }
}

const TABLES = [
  'alembic_version',
  'devices',
  'controlpath_ids',
  'deployables',
  'attributes',
  'attach_handles',
  'device_profiles',
  'extended_accelerator_requests',
] as const

/** Timestamp types (PostgreSQL `timestamp`, `timestamptz`) kept as the server's text. */
const PG_TIMESTAMP_OIDS = new Set([1114, 1184])

function sourceDialect(url: string): Dialect {
  const p = parseConnectionUrl(url)
  if (p.dialect === 'sqlite') {
    throw new InvalidInputError(
      `--from ${redactUrl(url)}: OpenStack Cyborg's database must be MariaDB/MySQL (mysql+pymysql://…) or PostgreSQL (postgresql://…)`,
      { code: 'OPENSTACK_SOURCE_UNSUPPORTED' },
    )
  }
  const { host, port, user, password, database } = p
  if (p.dialect === 'mysql') {
    const pool = createPool({
      host,
      port,
      user,
      password,
      database,
      connectionLimit: 1,
      dateStrings: true,
    })
    return new MysqlDialect({ pool })
  }
  const pool = new pg.Pool({
    host,
    port,
    user,
    password,
    database,
    max: 1,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        PG_TIMESTAMP_OIDS.has(oid)
          ? (v: string) => v
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  })
  pool.on('error', () => {})
  return new PostgresDialect({ pool })
}

/**
 * Reads the OpenStack Cyborg database at `url`.
 * @throws InvalidInputError (OPENSTACK_REVISION_UNSUPPORTED) for a revision this import does not
 * know, (OPENSTACK_SOURCE_UNSUPPORTED) for a database that is not Cyborg's; UnavailableError
 * when it cannot be reached.
 */
export async function readOpenStackSource(url: string): Promise<OpenStackSnapshot> {
  const db = new Kysely<OpenStackTables>({ dialect: sourceDialect(url) })
  try {
    let names: string[]
    try {
      names = (await db.introspection.getTables()).map((t) => t.name)
    } catch (err) {
      throw new UnavailableError(`cannot read ${redactUrl(url)}: ${errorMessage(err)}`, {
        cause: err,
      })
    }
    const missing = TABLES.filter((t) => !names.includes(t))
    if (missing.length > 0) {
      throw new InvalidInputError(
        `${redactUrl(url)} is not an OpenStack Cyborg database: it has no table ${missing.join(', ')}`,
        { code: 'OPENSTACK_SOURCE_UNSUPPORTED' },
      )
    }
    return await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const versions = await trx.selectFrom('alembic_version').select('version_num').execute()
        const revision = openStackRevision(versions.map((v) => v.version_num))
        return readRows(trx, revision)
      })
  } finally {
    await db.destroy()
  }
}

async function readRows(
  db: Kysely<OpenStackTables>,
  revision: OpenStackRevision,
): Promise<OpenStackSnapshot> {
  const stamps = (r: Stamped) => ({
    id: Number(r.id),
    uuid: r.uuid,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  })
  const all = <T extends keyof OpenStackTables>(table: T) =>
    db
      .selectFrom(table as 'devices')
      .selectAll()
      .orderBy('id')
      .execute() as unknown as Promise<OpenStackTables[T][]>
  const devices = await db
    .selectFrom('devices')
    .select([
      'id',
      'uuid',
      'created_at',
      'updated_at',
      'type',
      'vendor',
      'model',
      'std_board_info',
      'vendor_board_info',
      'hostname',
    ])
    .$if(revision.deviceStatus, (q) => q.select('status'))
    .$if(revision.deviceState, (q) => q.select('device_state'))
    .orderBy('id')
    .execute()
  const nullableId = (v: number | null) => (v === null ? null : Number(v))
  return {
    revision,
    devices: devices.map((d) => ({
      ...stamps(d),
      type: d.type,
      vendor: d.vendor,
      model: d.model,
      stdBoardInfo: d.std_board_info,
      vendorBoardInfo: d.vendor_board_info,
      hostname: d.hostname,
      ...('status' in d ? { status: d.status } : {}),
      ...('device_state' in d ? { deviceState: d.device_state } : {}),
    })),
    controlPaths: (await all('controlpath_ids')).map((c) => ({
      ...stamps(c),
      deviceId: Number(c.device_id),
      cpidType: c.cpid_type,
      cpidInfo: c.cpid_info,
    })),
    deployables: (await all('deployables')).map((d) => ({
      ...stamps(d),
      parentId: nullableId(d.parent_id),
      rootId: nullableId(d.root_id),
      name: d.name,
      numAccelerators: Number(d.num_accelerators),
      deviceId: Number(d.device_id),
      rpUuid: d.rp_uuid,
      driverName: d.driver_name,
      bitstreamId: d.bitstream_id,
    })),
    attributes: (await all('attributes')).map((a) => ({
      ...stamps(a),
      deployableId: Number(a.deployable_id),
      key: a.key,
      value: a.value,
    })),
    attachHandles: (await all('attach_handles')).map((h) => ({
      ...stamps(h),
      deployableId: Number(h.deployable_id),
      cpidId: Number(h.cpid_id),
      inUse: h.in_use === true || Number(h.in_use) === 1,
      attachType: h.attach_type,
      attachInfo: h.attach_info,
    })),
    deviceProfiles: (await all('device_profiles')).map((p) => ({
      ...stamps(p),
      name: p.name,
      profileJson: p.profile_json,
      description: p.description,
    })),
    arqs: (await all('extended_accelerator_requests')).map((a) => ({
      ...stamps(a),
      projectId: a.project_id,
      state: a.state,
      deviceProfileId: Number(a.device_profile_id),
      deviceProfileGroupId: Number(a.device_profile_group_id),
      hostname: a.hostname,
      deviceRpUuid: a.device_rp_uuid,
      instanceUuid: a.instance_uuid,
      attachHandleId: nullableId(a.attach_handle_id),
      deployableId: nullableId(a.deployable_id),
    })),
  }
}
