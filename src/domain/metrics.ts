/**
 * The metrics port (issue 16, docs/metrics.md): what the services record, by name from one catalog,
 * without depending on prom-client (src/main/metrics/prometheus.ts implements it). Every metric, its type,
 * help and labels are listed in METRICS; a test checks that docs/metrics.md lists each one.
 *
 * Label sets are bounded: no ARQ, instance or request uuid is ever a label. Device uuids appear only
 * on the per-device telemetry gauges, whose series go with their device.
 */

export type MetricType = 'counter' | 'histogram' | 'gauge'

export interface MetricSpec {
  type: MetricType
  help: string
  labels: readonly string[]
  /** Histogram buckets (seconds or counts). */
  buckets?: readonly number[]
}

const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const SLOW = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

/** Every metric Cyborg exposes. Names follow Prometheus conventions (`_total`, `_seconds`). */
export const METRICS = {
  cyborg_http_requests_total: {
    type: 'counter',
    help: 'HTTP requests answered by the API, by route template, method and status code.',
    labels: ['route', 'method', 'status'],
  },
  cyborg_http_request_duration_seconds: {
    type: 'histogram',
    help: 'Time from receiving an HTTP request to sending its answer, by route template and method.',
    labels: ['route', 'method'],
    buckets: LATENCY,
  },
  cyborg_rpc_calls_total: {
    type: 'counter',
    help: 'RPC calls served, by service (conductor, agent), method and outcome (ok, or the error code).',
    labels: ['service', 'method', 'outcome'],
  },
  cyborg_rpc_call_duration_seconds: {
    type: 'histogram',
    help: 'Time to serve an RPC call, by service and method.',
    labels: ['service', 'method'],
    buckets: LATENCY,
  },
  cyborg_db_commit_batch_size: {
    type: 'histogram',
    help: "Writes per group-commit transaction (the conductor's save-out rate).",
    labels: [],
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  },
  cyborg_db_commit_duration_seconds: {
    type: 'histogram',
    help: 'Time of one group-commit batch, from BEGIN to the answer of COMMIT (its writes run in it).',
    labels: [],
    buckets: LATENCY,
  },
  cyborg_db_write_retries_total: {
    type: 'counter',
    help:
      'Group-commit writes run again after a transient error, by cause (deadlock: on Galera also a certification failure; ' +
      'not_ready: 1047; connection_lost: before the COMMIT).',
    labels: ['cause'],
  },
  cyborg_bus_reconnects_total: {
    type: 'counter',
    help: 'Connections to the message bus re-established after a loss.',
    labels: [],
  },
  cyborg_bus_messages_total: {
    type: 'counter',
    help: 'Messages this process put on RabbitMQ (direction sent) or took from it (received), by kind: call (a request), cast, publish (fanout), reply.',
    labels: ['direction', 'kind'],
  },
  cyborg_peer_requests_total: {
    type: 'counter',
    help: 'HTTP requests of the conductor to Placement and Nova, by peer and outcome (the status class 2xx…5xx, or error when no answer came).',
    labels: ['peer', 'outcome'],
  },
  cyborg_peer_request_duration_seconds: {
    type: 'histogram',
    help: 'Time of an HTTP request to an OpenStack service.',
    labels: ['peer'],
    buckets: LATENCY,
  },
  cyborg_clean_asks_total: {
    type: 'counter',
    help: "Clean asks sent by this conductor to agents, by RPC method (cleanUnit: one unit; cleanUnits: a host's batch).",
    labels: ['method'],
  },
  cyborg_clean_asked_units_total: {
    type: 'counter',
    help: 'Units carried by the clean asks of this conductor (cleanUnits carries many per message).',
    labels: [],
  },
  cyborg_clean_settle_batch_size: {
    type: 'histogram',
    help: "Clean outcomes settled per write transaction (one agent's answers that arrive together).",
    labels: [],
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  },
  cyborg_unit_cleaning_seconds: {
    type: 'histogram',
    help: 'Time a released unit spent cleaning, from its release to its clean settled, by result (ok, skipped, failed, override).',
    labels: ['result'],
    // Fine near a fast clean plus its bound (issue 28: p99 < clean + 50 ms), up to a sanitize's hour.
    buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 10, 60, 600, 3600],
  },
  cyborg_lease_sweeps_total: {
    type: 'counter',
    help: 'Lease sweeps run by this conductor, by outcome (ok, error).',
    labels: ['outcome'],
  },
  cyborg_lease_fences_total: {
    type: 'counter',
    help: 'Hosts fenced by this conductor because their agent was past its lease.',
    labels: [],
  },
  cyborg_discovery_duration_seconds: {
    type: 'histogram',
    help: "Time of one driver's discovery run on this agent, by driver and outcome.",
    labels: ['driver', 'outcome'],
    buckets: SLOW,
  },
  cyborg_reports_total: {
    type: 'counter',
    help:
      'Inventory reports of this agent: sent (a changed inventory), skipped (unchanged, ' +
      'confirmed by a heartbeat), replayed (from the outbox after a restart), failed.',
    labels: ['result'],
  },
  cyborg_devices: {
    type: 'gauge',
    help: 'Devices by type, host, lifecycle, status and health (conductor, from the database).',
    labels: ['type', 'host', 'lifecycle', 'status', 'health'],
  },
  cyborg_deployables: {
    type: 'gauge',
    help: 'Deployables by host and whether they are pending removal (conductor, from the database).',
    labels: ['host', 'removal_pending'],
  },
  cyborg_attach_handles: {
    type: 'gauge',
    help: 'Attach handles by host and state (free, in_use, cleaning: released and not yet cleaned) (conductor, from the database).',
    labels: ['host', 'state'],
  },
  cyborg_arqs: {
    type: 'gauge',
    help: 'Accelerator requests by state (conductor, from the database).',
    labels: ['state'],
  },
  cyborg_agents: {
    type: 'gauge',
    help: 'Agents by lease state (up, down), from their last heartbeat (conductor).',
    labels: ['state'],
  },
  cyborg_device_utilization_ratio: {
    type: 'gauge',
    help: 'Latest telemetry: how busy the device is, 0 to 1 (GPU utilisation).',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_memory_used_bytes: {
    type: 'gauge',
    help: 'Latest telemetry: device memory in use.',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_memory_total_bytes: {
    type: 'gauge',
    help: 'Latest telemetry: device memory in all.',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_temperature_celsius: {
    type: 'gauge',
    help: 'Latest telemetry: device temperature.',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_power_watts: {
    type: 'gauge',
    help: 'Latest telemetry: power drawn by the device.',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_ecc_errors: {
    type: 'gauge',
    help: 'Latest telemetry: ECC errors the device counts since its driver loaded (volatile), by kind (correctable, uncorrectable).',
    labels: ['host', 'device', 'type', 'vendor', 'kind'],
  },
  cyborg_device_wear_ratio: {
    type: 'gauge',
    help: 'Latest telemetry: share of rated endurance used, 0 to 1 (NVMe percentage used / 100).',
    labels: ['host', 'device', 'type', 'vendor'],
  },
  cyborg_device_counter: {
    type: 'gauge',
    help: 'Latest telemetry: another counter a driver reads (FPGA, QAT sysfs), by its name.',
    labels: ['host', 'device', 'type', 'vendor', 'name'],
  },
  cyborg_fleet_refresh_duration_seconds: {
    type: 'gauge',
    help: 'Time the last computation of the fleet gauges took.',
    labels: [],
  },
} as const satisfies Record<string, MetricSpec>

export type MetricName = keyof typeof METRICS
type OfType<T extends MetricType> = {
  [K in MetricName]: (typeof METRICS)[K]['type'] extends T ? K : never
}[MetricName]
export type CounterName = OfType<'counter'>
export type HistogramName = OfType<'histogram'>
export type GaugeName = OfType<'gauge'>

/** Label values, by label name. */
export type Labels = Readonly<Record<string, string>>

export interface Metrics {
  /** Adds `value` (default 1) to a counter. */
  inc(name: CounterName, labels?: Labels, value?: number): void
  /** Records one observation (seconds, or a count) in a histogram. */
  observe(name: HistogramName, value: number, labels?: Labels): void
  /** Replaces every series of a gauge with these (series not listed disappear). */
  replace(name: GaugeName, series: readonly { labels: Labels; value: number }[]): void
  /**
   * Runs `hook` before each exposition (e.g. to turn in-memory telemetry samples into gauges with
   * `replace`). Hooks must not touch the database: a scrape never does.
   */
  beforeExpose(hook: () => void): void
}

const noop = () => {}

/** Records nothing; for tests and processes without metrics. */
export const noopMetrics: Metrics = { inc: noop, observe: noop, replace: noop, beforeExpose: noop }

/** Seconds since `start` (a `performance.now()` reading). */
export const secondsSince = (start: number): number => (performance.now() - start) / 1000
