/**
 * OpenStack Cyborg's database as `cyborg db import-openstack` reads it (docs/migrate-from-openstack-cyborg.md):
 * the alembic revisions whose schema it knows, and its rows, one type per table. Names follow
 * upstream `cyborg/db/sqlalchemy/models.py`; values are as the database gave them (timestamps
 * as `YYYY-MM-DD HH:MM:SS[.ffffff]` text, naive UTC). Pure: the reading is src/db/openstack-import/openstack-source.ts.
 */
import { InvalidInputError } from '../errors.js'

/** One alembic revision of OpenStack Cyborg's schema that the import reads. */
export interface OpenStackRevision {
  /** `alembic_version.version_num`. */
  revision: string
  /** The migration's name upstream (`cyborg/db/sqlalchemy/alembic/versions/<revision>_<name>.py`). */
  name: string
  /** The releases whose head it is (or the cycle that made it, for one that is no release's head). */
  releases: string
  /** `devices.status` exists (enabled | maintaining). */
  deviceStatus: boolean
  /** `devices.device_state` exists (NULL until upstream's backfill, or one of DEVICE_STATES). */
  deviceState: boolean
}

/** The values of `devices.device_state` (revision b47c8f2d1e3a, 17.0.0). */
export const DEVICE_STATES = [
  'available',
  'allocated',
  'pending_cleaning',
  'cleaning',
  'error',
] as const

/**
 * The revisions this import reads, oldest first: every one of openstack/cyborg's alembic history
 * from 9.0.0's head to 17.0.0's (docs/migrate-from-openstack-cyborg.md). `6c77bd6afea5` adds
 * `devices.status`; `9625668549b5` and `a35b4295a0e5` add MDEV, PCI and NVME to `devices.type`;
 * `b47c8f2d1e3a` adds `devices.device_state`. The two in between were never a release's head, but a
 * database upgraded by a development tree of 2026.2 may stand at them.
 */
export const OPENSTACK_REVISIONS: readonly OpenStackRevision[] = [
  {
    revision: '4cc1d79978fc',
    name: 'add_ssd_type',
    releases: '9.0.0 (Zed) and 10.x (2023.1)',
    deviceStatus: false,
    deviceState: false,
  },
  {
    revision: '6c77bd6afea5',
    name: 'add-device-status',
    releases: '11.0.0 (2023.2) to 16.x (2026.1)',
    deviceStatus: true,
    deviceState: false,
  },
  {
    revision: '9625668549b5',
    name: 'add_mdev_and_pci_types',
    releases: '2026.2 development, before 17.0.0',
    deviceStatus: true,
    deviceState: false,
  },
  {
    revision: 'a35b4295a0e5',
    name: 'add nvme type',
    releases: '2026.2 development, before 17.0.0',
    deviceStatus: true,
    deviceState: false,
  },
  {
    revision: 'b47c8f2d1e3a',
    name: 'add device_state',
    releases: '17.0.0 (2026.2)',
    deviceStatus: true,
    deviceState: true,
  },
]

/** The supported revisions as one phrase, for messages. */
export function supportedRevisionsText(): string {
  return OPENSTACK_REVISIONS.map((r) => `${r.revision} (${r.releases})`).join(', ')
}

/**
 * The revision `versions` (the rows of `alembic_version`) names.
 * @throws InvalidInputError (code OPENSTACK_REVISION_UNSUPPORTED) naming it and the supported ones.
 */
export function openStackRevision(versions: readonly string[]): OpenStackRevision {
  if (versions.length !== 1) {
    throw new InvalidInputError(
      `the OpenStack Cyborg database has ${versions.length} alembic_version rows ` +
        `(${versions.join(', ') || 'none'}); expected one of ${supportedRevisionsText()}`,
      { code: 'OPENSTACK_REVISION_UNSUPPORTED', details: { versions } },
    )
  }
  const found = OPENSTACK_REVISIONS.find((r) => r.revision === versions[0])
  if (found) return found
  throw new InvalidInputError(
    `OpenStack Cyborg schema revision ${versions[0]} is not supported; supported: ` +
      `${supportedRevisionsText()}. An older Cyborg: upgrade its database to one of these first ` +
      `(cyborg-dbsync upgrade); a newer one's schema is not known to this import`,
    { code: 'OPENSTACK_REVISION_UNSUPPORTED', details: { revision: versions[0] } },
  )
}

/** Columns every table has. */
interface Row {
  id: number
  uuid: string
  createdAt: string | null
  updatedAt: string | null
}

export interface OsDevice extends Row {
  type: string
  vendor: string
  model: string
  stdBoardInfo: string | null
  vendorBoardInfo: string | null
  hostname: string
  /** From revision 6c77bd6afea5 on; undefined before. */
  status?: string
  /** From revision b47c8f2d1e3a on (null until upstream's backfill); undefined before. */
  deviceState?: string | null
}

export interface OsControlPath extends Row {
  deviceId: number
  cpidType: string
  cpidInfo: string
}

export interface OsDeployable extends Row {
  parentId: number | null
  rootId: number | null
  name: string
  numAccelerators: number
  deviceId: number
  rpUuid: string | null
  driverName: string | null
  bitstreamId: string | null
}

export interface OsAttribute extends Row {
  deployableId: number
  key: string
  value: string
}

export interface OsAttachHandle extends Row {
  deployableId: number
  cpidId: number
  inUse: boolean
  attachType: string
  attachInfo: string
}

export interface OsDeviceProfile extends Row {
  name: string
  profileJson: string
  description: string | null
}

/** A row of `extended_accelerator_requests`. */
export interface OsArq extends Row {
  projectId: string | null
  state: string
  deviceProfileId: number
  deviceProfileGroupId: number
  hostname: string | null
  deviceRpUuid: string | null
  instanceUuid: string | null
  attachHandleId: number | null
  deployableId: number | null
}

/** Everything the import reads from one OpenStack Cyborg database, in id order. */
export interface OpenStackSnapshot {
  revision: OpenStackRevision
  devices: OsDevice[]
  controlPaths: OsControlPath[]
  deployables: OsDeployable[]
  attributes: OsAttribute[]
  attachHandles: OsAttachHandle[]
  deviceProfiles: OsDeviceProfile[]
  arqs: OsArq[]
}
