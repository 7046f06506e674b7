/**
 * The conductor's RPC contract: every write in the system goes through one of these methods
 * (seed 002: the conductor is the single writer). Bump the minor version for additions, the
 * major version for changes that old callers cannot survive.
 */
import type { Metrics } from '../domain/metrics.js'
import type { MessageBus } from '../bus/bus.js'
import type {
  Attribute,
  Device,
  DeviceStatus,
  InventorySnapshot,
} from '../domain/inventory/inventory.js'
import type { DeviceProfile } from '../domain/device-profile.js'
import type { Arq, ArqState } from '../domain/arq.js'
import type { AttachTarget } from '../domain/v1-accelerator.js'
import type {
  CreatedWebhook,
  NewWebhook,
  Webhook,
  WebhookChanges,
} from '../domain/webhooks/webhooks.js'
import type { PlacementExplainResult, PlacementGroupQuery } from '../domain/placement-explain.js'
import type { DeviceConfigChange, DeviceLayout } from '../domain/device-config.js'
import { createRpcClient, pickMethods, serveRpc, type RpcClientOptions } from './rpc.js'
import type {
  DriverActionOutcome,
  HostDiscovery,
  HostDrivers,
  InventoryReportResult,
} from './admin-types.js'

export type { InventoryReportResult } from './admin-types.js'

/** What `programDeployable` did. */
export interface ProgramOutcome {
  deployable: string
  imageUuid: string
  /** The operation's uuid, in its events and custody record. */
  operation: string
}

/** What `configureDevice` did. */
export interface ConfigureOutcome {
  device: string
  /** The operation's uuid, in its event and custody record. */
  operation: string
  /** False when the device already had that layout. */
  changed: boolean
  previous: DeviceLayout
  applied: DeviceLayout
}

/** What `cleanDevice` did. */
export interface DeviceCleanOutcome {
  device: string
  /** The units (attach handle uuids) asked to clean again, or put back in service with `force`. */
  units: string[]
  forced: boolean
}

export const CONDUCTOR_TOPIC = 'cyborg.conductor'
/** 1.0; 1.1 adds `markDeviceReady`; 1.2 adds `inventoryHash` to `heartbeat`; 1.3 adds the ARQ methods;
 * 1.4 adds the v1 accelerator writes (attach, detach, acc_specs, remote registration) and the driver administration;
 * 1.5 adds the webhook writes (create, update, delete); 1.6 adds `placementExplain` (a read of Placement for explain);
 * 1.7 adds `cleanDevice` (clean before reuse, docs/cleaning.md); 1.8 adds `programDeployable` and
 * `configureDevice` (docs/fpga.md, docs/drivers.md); 1.9 adds the optional `bindId` to `bindArqs` and
 * `createId` to `createArqs` (a redelivered bind or create answers from its first run: docs/arqs.md,
 * "Redelivered binds"); 1.10 adds the optional `deleteId` to `deleteArqs` by uuid (a redelivered delete
 * answers as its first run: docs/arqs.md, "Redelivered deletes"). */
export const CONDUCTOR_RPC_VERSION = '1.10'

/** One ARQ's binding, as Nova's PATCH (or the openstack CLI's) gives it. */
export interface ArqBindRequest {
  hostname: string
  /** The deployable's provider that Placement allocated; absent in standalone mode (the conductor chooses). */
  deviceRpUuid?: string
  instanceUuid: string
  projectId?: string
}

/** What became of one ARQ of a bind. */
export interface ArqBindOutcome {
  uuid: string
  state: ArqState
  /** Why it is BindFailed. */
  reason?: string
}

export interface ConductorRpc {
  /** An agent's full inventory snapshot, diffed into the database by control path. */
  reportInventory(
    req: InventorySnapshot & {
      autoActivate: boolean
      /** The compute node provider in Placement, as the agent resolved it (name, and uuid if known). */
      resourceProvider?: { name: string; uuid?: string }
    },
  ): Promise<InventoryReportResult>
  /**
   * A service's heartbeat (services table). (1.2) An agent whose inventory is unchanged sends its
   * hash along: `inventoryCurrent` says whether that is the last report the conductor accepted for
   * the host, checked by the heartbeat's own UPDATE, so an unchanged inventory costs no statement
   * and no snapshot on the wire. When false (never accepted, or cleared for a retry) the agent
   * sends the full report. A 1.1 conductor ignores the hash and answers nothing.
   */
  heartbeat(req: {
    host: string
    binary: string
    version: string
    inventoryHash?: string
  }): Promise<{ inventoryCurrent: boolean } | undefined>
  createDeviceProfile(req: {
    name: string
    description: string | null
    groups: Record<string, string>[]
    uuid?: string
  }): Promise<DeviceProfile>
  /** Deletes all or nothing; NotFoundError names the first missing one. */
  deleteDeviceProfiles(req: { uuids: string[] }): Promise<void>
  createAttribute(req: { deployableId: number; key: string; value: string }): Promise<Attribute>
  deleteAttribute(req: { uuid: string }): Promise<void>
  setDeviceStatus(req: { uuid: string; status: DeviceStatus }): Promise<Device>
  /**
   * (1.1) Seed 000 lifecycle: marks an inactive or error device ready and has its agent install it;
   * resolves with the device as saved, `active` or `error` (with `lifecycleReason`).
   * @throws NotFoundError, ConflictError (DEVICE_LIFECYCLE_CONFLICT) for any other lifecycle
   */
  markDeviceReady(req: { uuid: string }): Promise<Device>
  /**
   * (1.7) An operator's clean of a device's units left cleaning or failed (docs/cleaning.md): asks
   * its agent again now, or with `force` puts them back in service without a clean, recorded in
   * the custody ledger as an override by `userId` / `projectId`.
   * @throws NotFoundError (DEVICE_NOT_FOUND); UnavailableError when this conductor reaches no agents
   */
  cleanDevice(req: {
    uuid: string
    force?: boolean
    userId?: string | null
    projectId?: string | null
  }): Promise<DeviceCleanOutcome>
  /**
   * (1.8) An operator's program of an FPGA deployable with a Glance image (docs/fpga.md): its units
   * are taken out of service, its agent programs the card and rediscovers it, Placement gets the
   * new traits, and then the units come back; an event and a custody record say who and what.
   * @throws NotFoundError (deployable); ConflictError (RECONFIG_UNITS_HELD) while a unit is
   *   allocated, cleaning or reconfigured; InvalidInputError for an image refused before the card
   *   was touched (not found, hash or signature); DriverError when programming failed;
   *   UnavailableError when the agent did not answer (the units stay out until it does)
   */
  programDeployable(req: {
    uuid: string
    imageUuid: string
    userId?: string | null
    projectId?: string | null
  }): Promise<ProgramOutcome>
  /**
   * (1.8) An operator's re-partition of a device (docs/drivers.md, "Configure"): its SR-IOV VF
   * count or vGPU type, through its agent, with Placement's providers and inventories brought in
   * step before the answer; an event and a custody record say who and what.
   * @throws NotFoundError; ConflictError (RECONFIG_UNITS_HELD) while a unit is allocated, cleaning
   *   or reconfigured, or Placement has allocations against the device; InvalidInputError naming
   *   the field (out of range, unknown type, CONFIGURE_UNSUPPORTED); DriverError CONFIGURE_FAILED;
   *   UnavailableError when the agent did not answer (the units stay out until it does)
   */
  configureDevice(req: {
    uuid: string
    change: DeviceConfigChange
    userId?: string | null
    projectId?: string | null
  }): Promise<ConfigureOutcome>
  /**
   * (1.3) Creates one ARQ per requested unit of each group of the device profile, all in one write.
   * (1.9) `createId`, a uuid unique to the caller's request: the ARQs' uuids are derived from it, so
   * the same create delivered again is answered with the ARQs its first run made.
   * @throws NotFoundError (DEVICE_PROFILE_NOT_FOUND), InvalidInputError for a bad amount or more
   *   than `maxArqs` units
   */
  createArqs(req: {
    deviceProfileName: string
    projectId: string | null
    maxArqs: number
    createId?: string
  }): Promise<Arq[]>
  /**
   * (1.3) Binds ARQs: Initial|Unbound → BindStarted → Bound | BindFailed. Resolves once every ARQ
   * is resolved (Nova is told in one event batch when `[nova]` is set).
   * (1.9) `bindId`, a uuid unique to the caller's request (the API makes one per PATCH): when every
   * ARQ already carries it, this is the same bind delivered again after its first run committed,
   * answered from the ARQs as they are, with nothing changed and Nova not told again.
   * @throws NotFoundError for an unknown ARQ, ConflictError when an ARQ is not bindable or the
   *   instance already has bound ARQs (nothing is changed then)
   */
  bindArqs(req: {
    bindings: Record<string, ArqBindRequest>
    bindId?: string
  }): Promise<ArqBindOutcome[]>
  /** (1.3) Unbinds: frees the handle, has the agent release the device; → Unbound. Idempotent. */
  unbindArqs(req: { uuids: string[] }): Promise<ArqBindOutcome[]>
  /**
   * (1.3) Unbinds and deletes ARQs by uuid (NotFoundError for unknown ones, after deleting the rest)
   * or by instance (idempotent; (1.4) only `projectId`'s requests when given).
   * (1.10) `deleteId`, a uuid unique to the caller's request (the API makes one per DELETE): the
   * same delete delivered again answers the requests its first run deleted as deleted, not 404.
   */
  deleteArqs(
    req: { uuids: string[]; deleteId?: string } | { instanceUuid: string; projectId?: string },
  ): Promise<{ deleted: string[] }>
  /**
   * (1.4) v1 attach: claims a free unit of the accelerator for an instance or a host, has the
   * host's agent prepare it, and records it as an accelerator request with no device profile.
   * Idempotent for the same target (`changed` false).
   * @throws NotFoundError, InvalidInputError, ConflictError (ACCELERATOR_NOT_ACTIVE, ACCELERATOR_IN_USE, ATTACH_FAILED)
   */
  attachAccelerator(req: {
    uuid: string
    target: AttachTarget
    /**
     * The caller's project: the attachment is its (counted against its quota, docs/quota.md), the
     * same target again is a no-op only for its own attachment, and a 409 names only its holders.
     */
    projectId?: string | null
    /** An admin's call: a 409 names the holders of every project. */
    seesAllProjects?: boolean
  }): Promise<{ uuid: string; attachment: string; changed: boolean }>
  /**
   * (1.4) v1 detach: deletes the accelerator's v1 attachments (only the instance's, when given).
   * With `projectId` (a non-admin caller's project) only that project's requests are seen and
   * touched: another project's are as absent (docs/api-v1.md, "Projects").
   * @throws NotFoundError (ATTACHMENT_NOT_FOUND: nothing of the caller's attached to the instance),
   *   ConflictError (ACCELERATOR_HELD when only v2 requests hold it; DETACH_INCOMPLETE)
   */
  detachAccelerator(req: {
    uuid: string
    instanceUuid?: string
    projectId?: string
  }): Promise<{ detached: string[] }>
  /**
   * (1.4) Replaces the accelerator's v1 spec; with `ifMatch`, only if its ETag still matches.
   * @throws NotFoundError, InvalidInputError, ConflictError (ACC_SPECS_STALE)
   */
  setAcceleratorSpecs(req: {
    uuid: string
    accSpecs: unknown
    ifMatch?: string
  }): Promise<{ etag: string }>
  /**
   * (1.4) The drivers of every agent in the services table (or of `hostname`), asked in parallel;
   * an agent that does not answer within a bound is `unreachable`. @throws NotFoundError for an unknown host
   */
  listAgentDrivers(req: { hostname?: string }): Promise<{ hosts: HostDrivers[] }>
  /**
   * (1.4) Enables `driver` on `hostname` (or on every agent that has it configured) and rediscovers.
   * @throws NotFoundError for an unknown host, or a driver that no answering agent has
   */
  installDriver(req: {
    driver: string
    hostname?: string
  }): Promise<{ driver: string; hosts: DriverActionOutcome[] }>
  /**
   * (1.4) Disables `driver` like installDriver enables it, unless any of its devices there is allocated.
   * @throws ConflictError (DRIVER_DEVICES_ALLOCATED) naming the allocated deployables; nothing is changed then
   */
  uninstallDriver(req: {
    driver: string
    hostname?: string
    /** A non-admin caller's project: the 409 names only its requests and counts the others. */
    projectId?: string
  }): Promise<{ driver: string; hosts: DriverActionOutcome[] }>
  /** (1.4) Merges `options` into the driver's options on the host(s) and rediscovers. @throws as installDriver, InvalidInputError */
  updateDriver(req: {
    driver: string
    hostname?: string
    options: Record<string, string>
  }): Promise<{ driver: string; hosts: DriverActionOutcome[] }>
  /** (1.4) Has `hostname`'s agent (or every agent's) discover now; answers what changed per host. @throws NotFoundError */
  discoverHosts(req: { hostname?: string }): Promise<{ hosts: HostDiscovery[] }>
  /**
   * (1.4) Registers a remote accelerator (v1 `POST /v1/accelerators`): the first live agent, in host
   * order, that runs the `remote` driver takes it, reports it, and the deployable gets `uuid` (a new
   * one when absent). Resolves once that report is ingested.
   * @throws InvalidInputError; ConflictError ACCELERATOR_EXISTS (name or uuid taken),
   *   REMOTE_BACKEND_NOT_ENABLED (no live agent runs the remote driver); UnavailableError when the
   *   candidates did not answer
   */
  registerRemoteAccelerator(req: {
    name: string
    uuid?: string
  }): Promise<{ uuid: string; hostname: string }>
  /**
   * (1.5) Registers a webhook endpoint (docs/webhooks.md) with a new secret, which this answer is
   * the only one to show. Omitted filters mean all; `enabled` defaults to true.
   * @throws InvalidInputError naming the field
   */
  createWebhook(
    req: Pick<NewWebhook, 'url'> & Partial<Omit<NewWebhook, 'url'>>,
  ): Promise<CreatedWebhook>
  /** (1.5) Changes the given fields of an endpoint. @throws NotFoundError (WEBHOOK_NOT_FOUND), InvalidInputError */
  updateWebhook(req: WebhookChanges & { uuid: string }): Promise<Webhook>
  /** (1.5) Deletes an endpoint and its deliveries. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
  deleteWebhook(req: { uuid: string }): Promise<void>
  /**
   * (1.6) Placement's side of explain (docs/explain.md), read by the conductor since the API has no
   * Placement client: per group, the providers `GET /allocation_candidates` offers (at most 1000
   * allocation requests, `truncated` beyond); per provider (at most 50), its inventories, usages and
   * traits. `{configured: false}` without `[placement]`; a Placement failure comes back as `error`.
   * A 1.5 conductor answers NotFoundError RPC_NO_METHOD: explain then leaves Placement out.
   * @throws InvalidInputError for a malformed or oversized request
   */
  placementExplain(req: {
    groups?: PlacementGroupQuery[]
    providers?: string[]
  }): Promise<PlacementExplainResult>
}

export function createConductorClient(
  bus: MessageBus,
  options: RpcClientOptions = {},
): ConductorRpc {
  return createRpcClient<ConductorRpc & Record<string, never>>(
    bus,
    CONDUCTOR_TOPIC,
    CONDUCTOR_RPC_VERSION,
    options,
  )
}

/** Every method of the contract; a `satisfies` check keeps it complete. */
const CONDUCTOR_METHODS = Object.keys({
  reportInventory: true,
  heartbeat: true,
  createDeviceProfile: true,
  deleteDeviceProfiles: true,
  createAttribute: true,
  deleteAttribute: true,
  setDeviceStatus: true,
  markDeviceReady: true,
  cleanDevice: true,
  programDeployable: true,
  configureDevice: true,
  createArqs: true,
  bindArqs: true,
  unbindArqs: true,
  deleteArqs: true,
  attachAccelerator: true,
  detachAccelerator: true,
  setAcceleratorSpecs: true,
  listAgentDrivers: true,
  installDriver: true,
  uninstallDriver: true,
  updateDriver: true,
  discoverHosts: true,
  registerRemoteAccelerator: true,
  createWebhook: true,
  updateWebhook: true,
  deleteWebhook: true,
  placementExplain: true,
} satisfies Record<keyof ConductorRpc, true>) as (keyof ConductorRpc)[]

/**
 * Serves `impl` on the conductor topic. Only the contract's methods are reachable: whatever else
 * `impl` has (`stop`, `stats`) stays local.
 */
export function serveConductor(bus: MessageBus, impl: ConductorRpc, metrics?: Metrics) {
  const methods = pickMethods(impl, CONDUCTOR_METHODS)
  const observer = metrics && { metrics, service: 'conductor' }
  return serveRpc(bus, CONDUCTOR_TOPIC, CONDUCTOR_RPC_VERSION, methods, observer)
}
