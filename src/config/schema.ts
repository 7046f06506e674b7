/**
 * Every configuration option, in one table: the sections and names an OpenStack Cyborg operator
 * knows from cyborg.conf. The typed `Config`, the validation, the env overrides and
 * etc/cyborg.conf.sample all derive from this table; an option exists only if it is here.
 */
import {
  bool,
  databaseUrl,
  enumOf,
  int,
  list,
  optionalInt,
  optionalPath,
  optionalStr,
  path,
  port,
  str,
  transportUrl,
  url,
  type Option,
} from './options.js'
import { driverSections } from './driver-sections.js'
import { webhookOptions } from './webhook-options.js'
import { logOptions } from './log-options.js'
import { osloLimitOptions, quotaOptions } from './quota-options.js'
import { barbicanOptions, glanceOptions } from './image-options.js'
import { osloMiddlewareOptions, trustedProxiesOption } from './proxy-options.js'
import { keystoneAuthtokenOptions, keystoneClient, serviceUserOptions } from './keystone-options.js'

export const schema = {
  DEFAULT: {
    host: str({
      default: (ctx) => ctx.hostname,
      sampleDefault: '<the machine host name>',
      help: 'Name of this host: agents report their devices under it and are reached at it over RPC. Must be unique per host.',
    }),
    state_path: path({
      default: './.cyborg',
      help: 'Directory for local state: the SQLite database by default and the agent cache. Relative paths are taken from the working directory.',
    }),
    transport_url: transportUrl({
      help:
        'Message bus shared by separate api, conductor and agent processes: ' +
        'rabbit://user:pass@host:5672/vhost (several host:port pairs comma-separated are tried in ' +
        'order). Empty means the in-process bus of `cyborg up`.',
    }),
    rpc_response_timeout: int({
      default: 30,
      min: 1,
      help: 'Seconds a caller waits for the reply to an RPC (API and agent to conductor) before giving up; the API answers 503 then.',
    }),
    periodic_interval: int({
      default: 60,
      min: 1,
      help: 'Seconds between two discovery runs of the agent.',
    }),
    bind_timeout: int({
      default: 60,
      min: 1,
      help: 'Seconds to wait for accelerator requests to be bound.',
    }),
    service_down_time: int({
      default: 60,
      min: 1,
      help:
        'Seconds without a heartbeat after which an agent is down (its lease, as in Nova): its ' +
        "host's devices get health unknown and are not offered until its next full report.",
    }),
    ...logOptions,
  },
  api: {
    host_ip: str({
      default: '127.0.0.1',
      help: 'Address the API listens on; 0.0.0.0 for every interface.',
    }),
    port: port({ default: 6666, help: 'Port the API listens on.' }),
    public_endpoint: url({
      help:
        'Public URL of the API, used in links and version documents when the API sits behind a ' +
        'proxy, e.g. https://cyborg.example.com. It wins over any forwarded header.',
    }),
    trusted_proxies: trustedProxiesOption,
    api_workers: optionalInt({
      min: 1,
      max: 256,
      sampleDefault: '<the number of CPU cores>',
      help:
        'Number of API worker processes of `cyborg api`, all serving the same port ' +
        '(node:cluster); a crashed worker is restarted. Unset: the number of CPU cores. `cyborg ' +
        'up` always serves from its one process (its SQLite database and in-process bus live ' +
        'there) and ignores a larger value, with a warning.',
    }),
    max_arqs_per_request: int({
      default: 64,
      min: 1,
      help: 'Largest number of accelerator requests one API call may create.',
    }),
    fleet_cache_ms: int({
      default: 0,
      min: 0,
      help:
        'Milliseconds GET /v2/capacity and explain may reuse one read of the fleet (per API ' +
        'process, per host filter), so that dashboards polling a large fleet share one read; ' +
        'their answers may then be that much older than the database. 0 (the default): a read is ' +
        'reused only while nothing was committed to the database since (PostgreSQL, checked per ' +
        'request), so answers are never older than the request; SQLite and MariaDB then read on ' +
        'every request.',
    }),
    auth_strategy: enumOf(['noauth', 'keystone'] as const, {
      default: 'noauth',
      help:
        'How callers are authenticated: keystone (every request but /, /v1, /v2 and /healthcheck ' +
        'needs an X-Auth-Token that Keystone validates; see [keystone_authtoken]) or noauth ' +
        '(every caller is an admin of noauth_project_id; for tests and trusted single-user setups ' +
        'only).',
    }),
    noauth_project_id: str({
      default: '00000000-0000-0000-0000-000000000000',
      help: 'With auth_strategy = noauth: the project every caller belongs to (and every accelerator request is created in).',
    }),
    enable_ssl_api: bool({
      default: false,
      help:
        'Serve the API over HTTPS only, with [ssl] cert_file and key_file (links and version ' +
        'documents then say https). false: plain HTTP (put a TLS proxy in front and set ' +
        'public_endpoint).',
    }),
    headers_timeout: int({
      default: 10,
      min: 1,
      help: 'Seconds a client has to send the request line and all headers; a slower client gets 408 and is disconnected. At most request_timeout.',
    }),
    request_timeout: int({
      default: 30,
      min: 1,
      help:
        'Seconds a client has to send the whole request, body included (a Content-Length it never ' +
        'fills, a chunked body it never ends); then 408 and disconnected.',
    }),
    handler_timeout: int({
      default: 60,
      min: 1,
      help:
        'Seconds the API works on one request before answering 503 and logging the route; keep it ' +
        'above [DEFAULT] rpc_response_timeout so that a slow conductor is reported as such first. ' +
        'Below client_socket_timeout.',
    }),
    keepalive_timeout: int({
      default: 65,
      min: 1,
      help:
        'Seconds an idle keep-alive connection stays open for its next request. Keep it above the ' +
        'idle timeout of a load balancer in front (60 s for most), so that the balancer closes ' +
        'first.',
    }),
    client_socket_timeout: int({
      default: 120,
      min: 1,
      help: 'Seconds a connection may stay silent (nothing read or written) before it is closed, as in oslo.service; above handler_timeout.',
    }),
  },
  database: {
    connection: databaseUrl({
      default: 'sqlite:///$state_path/cyborg.sqlite',
      help: 'Database URL: sqlite:///path, postgresql://user:pass@host:5432/cyborg or mysql+pymysql://user:pass@host:3306/cyborg.',
    }),
    max_pool_size: int({
      default: 10,
      min: 1,
      help: 'Connections per process to PostgreSQL or MariaDB.',
    }),
  },
  agent: {
    report_interval: int({
      default: 10,
      min: 1,
      help: 'Seconds between two heartbeats of the agent (its lease; see [DEFAULT] service_down_time), apart from discovery.',
    }),
    enabled_drivers: list({
      default: ['fake'],
      help: 'Accelerator drivers the agent runs, comma-separated.',
    }),
    resource_provider_name: optionalStr({
      help:
        'Name of the compute node resource provider in Placement that device providers hang ' +
        'under. Unset: the fully qualified name of [DEFAULT] host as the resolver knows it, then ' +
        '[DEFAULT] host itself (tried in that order).',
    }),
    host_root: path({
      default: '/',
      help:
        "Where the agent sees the host's file system: / normally; the mount point of the host's " +
        'root (its /sys) when the agent runs in a container. Drivers read sysfs under it.',
    }),
    auto_activate: bool({
      default: false,
      help: 'Make newly discovered devices active at once instead of waiting for an operator to mark them ready.',
    }),
  },
  ...driverSections,
  conductor: {
    save_interval_ms: int({
      default: 2,
      min: 0,
      help:
        'Milliseconds the conductor gathers writes before committing them in one transaction, ' +
        'under load (after a batch of 4 or more); a write that finds little company commits at ' +
        'once. 0: never wait.',
    }),
    max_batch: int({ default: 64, min: 1, help: 'Most writes committed in one transaction.' }),
    health_recovery_reports: int({
      default: 2,
      min: 1,
      help:
        'Healthy inventory reports in a row before a device fenced by its own health (failed, or ' +
        'unknown from a probe) is offered again, so that a flapping device is not offered and ' +
        'fenced at every report. 1: offered at the first healthy report. A lease fence (a silent ' +
        'agent) lifts at the first full report.',
    }),
    clean_retry_interval: int({
      default: 60,
      min: 1,
      help:
        "Seconds after which the conductor asks a host's agent again to clean a released unit " +
        'that is still cleaning (docs/cleaning.md): the agent was silent, restarting or busy, or ' +
        'a conductor died mid-clean. A clean still running on the agent is joined, not started ' +
        'twice, and one already done is answered from memory. Each ask waits twice this long for ' +
        "its answer (and expires from the agent's queue then). The unit stays out of service " +
        'until its agent answers.',
    }),
    clean_placement_hold_ms: int({
      default: 1000,
      min: 0,
      help:
        'Milliseconds Placement keeps showing units reserved for their clean after fewer units ' +
        'of a deployable are cleaning (docs/cleaning.md, "The hold"): under steady turnover the ' +
        'count moves with every release, and following it cost two inventory writes per release. ' +
        'Never hides the last free unit; the database alone decides who may claim one. 0: lower ' +
        'at once.',
    }),
    reconfigure_timeout: int({
      default: 2400,
      min: 1,
      help:
        'Seconds one program (`openstack accelerator deployable program`) or configure (`cyborg ' +
        'device configure`) may take on its agent, download and flash included (docs/fpga.md). ' +
        'The units are out of service meanwhile. A fence older than this (its conductor died, or ' +
        "the agent never answered) is taken over by any conductor's sweep, which lifts it only " +
        'once the agent has rediscovered the device.',
    }),
  },
  events: {
    retention_hours: int({
      default: 24,
      min: 0,
      help:
        'Hours the conductor keeps events in its outbox after delivering them to every sink ' +
        '(docs/notifications.md); older ones are deleted every 10 minutes. 0: deleted at the next ' +
        'purge. Undelivered events are never deleted.',
    }),
  },
  custody: {
    retain_days: int({
      default: 400,
      min: 1,
      help:
        'Days the custody ledger keeps a record (docs/custody.md). Older records are pruned ' +
        'hourly by the conductor, which writes a checkpoint signed with signing_key_file in their ' +
        'place, so that the rest of the chain still verifies.',
    }),
    signing_key_file: optionalPath({
      help:
        "Ed25519 private key (PKCS#8 PEM) that signs the custody ledger's pruning checkpoints. " +
        'Unset: <state_path>/custody-signing.key. Generated with mode 0600 when missing; keep a ' +
        "copy of its public key (cyborg custody verify --public-key) where the database's " +
        'administrators cannot change it.',
    }),
  },
  metrics: {
    enabled: bool({
      default: true,
      help:
        'Serve GET /metrics (Prometheus/OpenMetrics text, no token) on the API. Keep it off the ' +
        'public endpoint at the proxy, or turn it off here and scrape [metrics] listen instead.',
    }),
    listen: optionalStr({
      mutable: true,
      help:
        'host:port where this process (conductor, agent, or the API too) serves /metrics on its ' +
        'own HTTP listener, e.g. 127.0.0.1:9386. Unset: no listener (the API still serves ' +
        '/metrics on its port when enabled).',
    }),
    fleet_refresh_seconds: int({
      default: 30,
      min: 1,
      mutable: true,
      help:
        'Seconds between two counts of the fleet gauges (devices, handles, requests, agents) by ' +
        'each conductor; scrapes read the last count and never query the database.',
    }),
  },
  placement: {
    ...keystoneClient('Placement'),
    create_root_provider: bool({
      default: false,
      help:
        'Create the compute node resource provider when Placement has none named [agent] ' +
        'resource_provider_name (standalone clouds without nova-compute). Otherwise the agent ' +
        'waits for it and then stops with a message naming what is missing.',
    }),
    timeout: int({ default: 30, min: 1, help: 'Seconds to wait for one Placement answer.' }),
  },
  glance: glanceOptions(keystoneClient('Glance')),
  barbican: barbicanOptions(keystoneClient('Barbican')),
  nova: {
    ...keystoneClient('Nova'),
    service_token: optionalStr({
      help: 'Static service token sent as X-Service-Token with every call to Nova (optional).',
      secret: true,
    }),
    timeout: int({ default: 30, min: 1, help: 'Seconds to wait for one Nova answer.' }),
  },
  service_user: serviceUserOptions,
  keystone_authtoken: keystoneAuthtokenOptions,
  oslo_messaging_notifications: {
    driver: enumOf(['noop', 'messagingv2'] as const, {
      default: 'noop',
      help:
        'How the conductor sends its events as OpenStack notifications (docs/notifications.md): ' +
        "messagingv2 (oslo.messaging's format, envelope 2.0, on exchange cyborg, read by " +
        "Ceilometer, Watcher or any oslo listener) or noop (nothing, oslo.messaging's default: " +
        'nobody consumes them otherwise, and unconsumed notification queues grow without bound).',
    }),
    topics: list({
      default: ['notifications'],
      help: 'Topics notifications are sent to; each message goes to every topic, on the queue <topic>.<priority> (notifications.info, notifications.error).',
    }),
    transport_url: transportUrl({
      help: 'RabbitMQ to send notifications to: rabbit://user:pass@host:5672/vhost. Empty: [DEFAULT] transport_url.',
    }),
  },
  oslo_messaging_rabbit: {
    rabbit_quorum_queue: bool({
      default: false,
      help:
        'Declare the RPC work queues (cyborg.conductor, cyborg.agent.<host>) as RabbitMQ quorum ' +
        'queues (x-queue-type: quorum, durable, replicated over the cluster), as oslo.messaging ' +
        'does with the same option: a queued call or cast survives the loss of a node. A queue ' +
        'that already exists as a classic queue is not converted: the servers refuse to start ' +
        'until it is deleted (docs/bus.md, "Quorum queues"). Needs RabbitMQ 3.8 or later.',
    }),
  },
  oslo_middleware: osloMiddlewareOptions,
  oslo_policy: {
    policy_file: str({
      default: 'policy.yaml',
      mutable: true,
      help:
        'Policy overrides (oslo.policy format, YAML or JSON: rule name: rule). A relative path is ' +
        'looked up next to the configuration files, then in /etc/cyborg; the default file may be ' +
        'absent. docs/policy.md lists the rules.',
    }),
  },
  ssl: {
    cert_file: optionalPath({
      help: 'PEM certificate (chain) the API serves when [api] enable_ssl_api = true: the server certificate first, then any intermediates.',
    }),
    key_file: optionalPath({ help: 'PEM private key of cert_file (unencrypted).' }),
    ca_file: optionalPath({
      help: 'PEM CA certificates that clients must present a certificate signed by (mutual TLS). Unset: clients need no certificate.',
    }),
  },
  webhooks: webhookOptions,
  quota: quotaOptions,
  oslo_limit: osloLimitOptions(keystoneClient('Keystone (limits)')),
} as const satisfies Record<string, Record<string, Option<unknown>>>

export type Schema = typeof schema
export type SectionName = keyof Schema

/** The validated configuration: `config.api.port`, `config.DEFAULT.state_path`, … (names as in cyborg.conf). */
export type Config = {
  readonly [S in SectionName]: {
    readonly [O in keyof Schema[S]]: Schema[S][O] extends Option<infer T> ? T : never
  }
}
