/**
 * Builds the real adapters from the configuration: state directory, database, message bus, and
 * the option objects of the core. Only src/main constructs adapters (docs/ARCHITECTURE.md).
 */
import { mkdirSync, readFileSync } from 'node:fs'
import type { Metrics } from '../domain/metrics.js'
import { optionError, type Config } from '../config/config.js'
import type { MessageBus } from '../bus/bus.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { createRabbitMqBus } from '../bus/rabbitmq-bus.js'
import { InvalidInputError } from '../domain/errors.js'
import { driverOptions, enabledDriverNames } from './driver-options.js'
import type { CoreAgentOptions } from './core.js'
import type { ConductorOptions } from '../conductor/conductor.js'
import type { WebhookDispatcherOptions } from '../conductor/outbox/webhook-dispatcher.js'
import type { Logger } from '../domain/logger.js'
import { errorMessage } from '../domain/error-message.js'
import { ConfigError } from '../domain/errors.js'
import { createPlacementClient, placementSettings } from '../openstack/placement.js'
import { createNovaClient, novaSettings, type NovaClient } from '../openstack/nova.js'
import { createGlanceClient, type GlanceClient } from '../openstack/glance.js'
import { createBarbicanClient, type BarbicanSettings } from '../openstack/barbican.js'
import { parseCaBundle } from '../openstack/certificate-chain.js'
import {
  createImageSignatureCheck,
  type ImageSignatureCheck,
} from '../openstack/image-signature-check.js'
import { keystoneSettings } from '../openstack/service-auth.js'
import { createUnifiedLimits } from '../openstack/unified-limits.js'
import type { LimitSource } from '../domain/quota.js'
import type { ImageSource } from '../agent/fpga-images.js'
import type { CorePlacement } from './core.js'
import { custodyKeyPath, loadCustodySigningKey } from './commands/custody-key.js'

/** Creates `[DEFAULT] state_path` (mode 0750) if missing. */
export function ensureStateDir(config: Config): string {
  const dir = config.DEFAULT.state_path
  try {
    mkdirSync(dir, { recursive: true, mode: 0o750 })
  } catch (err) {
    throw optionError(
      config,
      'DEFAULT',
      'state_path',
      `cannot create the directory: ${errorCode(err)}`,
    )
  }
  return dir
}

export interface BusOptions {
  /**
   * True for the separate api, conductor and agent processes: the in-process bus would leave them
   * unable to reach each other, so an empty transport_url is an error there.
   */
  shared: boolean
  log: Logger
  /** Names this process's connection on the broker (`rabbitmqctl list_connections client_properties`). */
  service: string
  /** Stops waiting for an unreachable broker (SIGTERM while starting). */
  signal?: AbortSignal
  /** Counts reconnections and messages (cyborg_bus_reconnects_total, cyborg_bus_messages_total). */
  metrics?: Metrics
}

/** What `[DEFAULT] transport_url` asks for: `in-process` or `rabbitmq`. */
export function busKind(config: Config): 'in-process' | 'rabbitmq' {
  return config.DEFAULT.transport_url === '' ? 'in-process' : 'rabbitmq'
}

/**
 * The message bus `[DEFAULT] transport_url` asks for: the in-process bus when empty, else RabbitMQ.
 * An unreachable broker is retried with backoff (logged) until it answers or `signal` aborts.
 * @throws ConfigError for an empty URL in a separate process, or a URL the bus cannot use
 */
export async function createConfiguredBus(
  config: Config,
  options: BusOptions,
): Promise<MessageBus> {
  const url = config.DEFAULT.transport_url
  const defaultTimeoutMs = rpcTimeoutMs(config)
  if (url === '') {
    if (options.shared) {
      throw optionError(
        config,
        'DEFAULT',
        'transport_url',
        'separate api, conductor and agent processes need a shared message bus (RabbitMQ: ' +
          'rabbit://user:pass@host:5672/); run `cyborg up` to run them in one process',
      )
    }
    return createInProcessBus({
      defaultTimeoutMs,
      onError: (err, context) =>
        options.log.warn({ err, ...context }, 'message without a caller failed'),
    })
  }
  try {
    return await createRabbitMqBus({
      url,
      log: options.log.child({ component: 'bus' }),
      defaultTimeoutMs,
      quorumQueues: config.oslo_messaging_rabbit.rabbit_quorum_queue,
      connectionName: `cyborg-${options.service}@${config.DEFAULT.host}`,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.metrics
        ? {
            onReconnect: () => options.metrics!.inc('cyborg_bus_reconnects_total'),
            onMessage: (direction, kind) =>
              options.metrics!.inc('cyborg_bus_messages_total', { direction, kind }),
          }
        : {}),
    })
  } catch (err) {
    if (err instanceof InvalidInputError && err.code === 'TRANSPORT_URL_INVALID') {
      // optionError shows the (masked) URL itself; add only the reason.
      throw optionError(
        config,
        'DEFAULT',
        'transport_url',
        String(err.details?.reason ?? err.message),
      )
    }
    throw err
  }
}

/** `[DEFAULT] rpc_response_timeout` in milliseconds. */
export function rpcTimeoutMs(config: Config): number {
  return config.DEFAULT.rpc_response_timeout * 1000
}

export function conductorOptions(config: Config): ConductorOptions {
  return {
    saveIntervalMs: config.conductor.save_interval_ms,
    maxBatch: config.conductor.max_batch,
    bindTimeoutMs: config.DEFAULT.bind_timeout * 1000,
    serviceDownTimeMs: config.DEFAULT.service_down_time * 1000,
    leaseSweepIntervalMs: config.agent.report_interval * 1000,
    healthRecoveryReports: config.conductor.health_recovery_reports,
    events: { retentionHours: config.events.retention_hours },
    cleaning: {
      retryIntervalMs: config.conductor.clean_retry_interval * 1000,
      placementHoldMs: config.conductor.clean_placement_hold_ms,
    },
    reconfig: { timeoutMs: config.conductor.reconfigure_timeout * 1000 },
    custody: {
      retainDays: config.custody.retain_days,
      signingKey: loadCustodySigningKey(custodyKeyPath(config)),
    },
    ...liveConductorOptions(config),
  }
}

/** The conductor's options that a reload applies (Conductor.reconfigure): `[webhooks]`, `[metrics] fleet_refresh_seconds`. */
export function liveConductorOptions(
  config: Config,
): Required<Pick<ConductorOptions, 'fleetRefreshMs'>> & { webhooks: WebhookDispatcherOptions } {
  return {
    fleetRefreshMs: config.metrics.fleet_refresh_seconds * 1000,
    webhooks: {
      timeoutMs: config.webhooks.timeout_seconds * 1000,
      concurrency: config.webhooks.concurrency,
      maxInFlight: config.webhooks.max_in_flight,
      maxAttempts: config.webhooks.max_attempts,
      backoffMs: config.webhooks.backoff_seconds * 1000,
      maxBackoffMs: config.webhooks.max_backoff_seconds * 1000,
      retentionHours: config.webhooks.retention_hours,
    },
  }
}

/**
 * Reads a service section's client settings with `read`, turning its ConfigError (`[section]
 * option …`) into the one-line config error that names the file and line of that option.
 */
function serviceSettings<T>(
  config: Config,
  section: 'placement' | 'glance' | 'barbican' | 'nova' | 'oslo_limit',
  read: () => T,
): T {
  try {
    return read()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    // The message may name another section ([service_user] for Nova).
    const prefix = /^\[(placement|glance|barbican|nova|service_user|oslo_limit)\] (\w+) /
    const [, named = section, option = 'endpoint_override'] = prefix.exec(err.message) ?? []
    throw optionError(
      config,
      named as typeof section | 'service_user',
      option,
      err.message.replace(prefix, ''),
    )
  }
}

/** The Placement client from `[placement]`, or undefined when it is not configured (embedded mode). */
export function placementOptions(config: Config, metrics?: Metrics): CorePlacement | undefined {
  const settings = serviceSettings(config, 'placement', () => placementSettings(config.placement))
  if (!settings) return undefined
  return {
    client: createPlacementClient(counted(settings, 'placement', metrics)),
    createRootProvider: config.placement.create_root_provider,
  }
}

/** FPGA bitstreams from Glance (`[glance]`), for the agent; undefined without `endpoint_override`. */
export function glanceImages(config: Config, metrics?: Metrics): ImageSource | undefined {
  const settings = serviceSettings(config, 'glance', () =>
    keystoneSettings('glance', config.glance, 'image'),
  )
  if (!settings) return undefined
  return glanceImageSource(createGlanceClient(settings), imageSignatureCheck(config, metrics))
}

/**
 * The signature policy of `[glance]` with certificates from `[barbican]` (docs/fpga.md).
 * @throws ConfigError for require_signed_images without what it needs, or an unusable trusted_ca_file
 */
export function imageSignatureCheck(config: Config, metrics?: Metrics): ImageSignatureCheck {
  const g = config.glance
  if (g.require_signed_images && !g.verify_image_signatures)
    throw optionError(
      config,
      'glance',
      'require_signed_images',
      'needs verify_image_signatures = true',
    )
  const barbican = serviceSettings(config, 'barbican', () =>
    keystoneSettings('barbican', config.barbican, 'key-manager'),
  )
  let trusted: { file: string; certificates: ReturnType<typeof parseCaBundle> } | undefined
  if (g.trusted_ca_file !== undefined) {
    try {
      const certificates = parseCaBundle(readFileSync(g.trusted_ca_file, 'utf8'))
      trusted = { file: g.trusted_ca_file, certificates }
    } catch (err) {
      throw optionError(config, 'glance', 'trusted_ca_file', `unusable: ${errorCode(err)}`)
    }
  }
  if (g.require_signed_images && !trusted)
    throw optionError(
      config,
      'glance',
      'trusted_ca_file',
      'is required when require_signed_images = true: without it no signed image can be trusted',
    )
  if (g.require_signed_images && !barbican)
    throw optionError(
      config,
      'barbican',
      'auth_type',
      'require_signed_images = true reads signing certificates from Barbican: set auth_type = password (or endpoint_override)',
    )
  return createImageSignatureCheck({
    verify: g.verify_image_signatures,
    require: g.require_signed_images,
    trusted,
    barbican: barbican
      ? createBarbicanClient(counted<BarbicanSettings>(barbican, 'barbican', metrics))
      : undefined,
  })
}

/**
 * The agent's image port, served by Glance: resolve the image, check what its signature needs
 * (`signatures`, when given), then download and verify it: hash, and signature as it streams.
 */
export function glanceImageSource(
  glance: GlanceClient,
  signatures?: ImageSignatureCheck,
): ImageSource {
  return {
    async fetch(ref, dest) {
      const image = await glance.resolve(ref)
      const verifier = await signatures?.prepare(image)
      await glance.download(image, dest, verifier)
      return { id: image.id }
    },
  }
}

/** The Nova client from `[nova]`, or undefined without `endpoint_override` (nobody to tell). */
export function novaOptions(config: Config, metrics?: Metrics): NovaClient | undefined {
  const settings = serviceSettings(config, 'nova', () =>
    novaSettings(config.nova, config.service_user),
  )
  return settings ? createNovaClient(counted(settings, 'nova', metrics)) : undefined
}

/** Settings whose every request is counted and timed (cyborg_peer_request*) when `metrics` is given. */
function counted<T extends { onCall?: (m: string, p: string, s: number, t: number) => void }>(
  settings: T,
  peer: string,
  metrics: Metrics | undefined,
): T {
  if (metrics === undefined) return settings
  return {
    ...settings,
    onCall: (method: string, path: string, status: number, seconds: number) => {
      const outcome = status === 0 ? 'error' : `${Math.floor(status / 100)}xx`
      metrics.inc('cyborg_peer_requests_total', { peer, outcome })
      metrics.observe('cyborg_peer_request_duration_seconds', seconds, { peer })
      settings.onCall?.(method, path, status, seconds)
    },
  }
}

/** @throws ConfigError naming the file and line of `[agent] enabled_drivers` for an unknown driver */
export function agentOptions(config: Config): CoreAgentOptions {
  enabledDriverNames(config)
  return {
    host: config.DEFAULT.host,
    periodicIntervalMs: config.DEFAULT.periodic_interval * 1000,
    reportIntervalMs: config.agent.report_interval * 1000,
    autoActivate: config.agent.auto_activate,
    enabledDrivers: [...config.agent.enabled_drivers],
    driverOptions: driverOptions(config),
    // Unset: the host's FQDN, then the host (resolved when the agent starts, see core.ts).
    resourceProviderNames:
      config.agent.resource_provider_name === undefined
        ? undefined
        : [config.agent.resource_provider_name, config.DEFAULT.host],
    hostRoot: config.agent.host_root,
    images: glanceImages(config),
  }
}

export function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException
  return e?.code ?? errorMessage(err)
}

/** Keystone unified limits from `[quota]` and `[oslo_limit]` (docs/quota.md), or undefined for `driver = noop`. */
export function quotaLimits(config: Config): LimitSource | undefined {
  if (config.quota.driver !== 'unified_limits') return undefined
  const settings = serviceSettings(config, 'oslo_limit', () =>
    keystoneSettings('oslo_limit', config.oslo_limit, 'identity'),
  )
  if (!settings)
    throw optionError(
      config,
      'oslo_limit',
      'auth_type',
      '[quota] driver = unified_limits reads limits from Keystone: set auth_type = password (or endpoint_override)',
    )
  return createUnifiedLimits({
    settings,
    endpointId: config.oslo_limit.endpoint_id,
    serviceType: config.oslo_limit.endpoint_service_type,
    cacheMs: config.quota.cache_seconds * 1000,
  })
}
