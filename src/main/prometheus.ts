/**
 * The Metrics port (src/domain/metrics.ts) on prom-client, the only home of prom-client: one
 * registry per process holding every metric of the catalog, plus Node's process metrics
 * (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`, …; not the three gauges prom-client
 * names `nodejs_active_*_total`, which break the naming rules promtool checks). Fleet gauges are set
 * by the conductor on its own timer, never per scrape.
 *
 * The exposition is negotiated: OpenMetrics text for a scraper that asks for it (Prometheus does),
 * the classic text format 0.0.4 otherwise (curl, `promtool check metrics`). prom-client's own
 * OpenMetrics mode renames counters in place (it strips `_total` from the metric object), so one
 * registry cannot serve both; the OpenMetrics text is made from the classic text instead
 * (toOpenMetrics: a counter family is named without `_total`, and `# EOF` ends it).
 */
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type PrometheusContentType,
} from 'prom-client'
import {
  METRICS,
  type Labels,
  type MetricName,
  type MetricSpec,
  type Metrics,
} from '../domain/metrics.js'

export interface PrometheusMetrics extends Metrics {
  /** The exposition for a scraper whose Accept header is `accept` (see above). */
  expose(accept?: string): Promise<{ contentType: string; body: string }>
  readonly registry: Registry<PrometheusContentType>
}

type Instrument = Counter<string> | Histogram<string> | Gauge<string>

/** Builds the registry; `defaultLabels` go on every series (the process kind and host). */
export function createPrometheusMetrics(
  options: { defaultLabels?: Labels; processMetrics?: boolean } = {},
): PrometheusMetrics {
  const registry = new Registry<PrometheusContentType>()
  if (options.defaultLabels) registry.setDefaultLabels({ ...options.defaultLabels })
  if (options.processMetrics !== false) {
    collectDefaultMetrics({ register: registry })
    for (const name of ['handles', 'requests', 'resources'])
      registry.removeSingleMetric(`nodejs_active_${name}_total`)
  }
  const instruments = new Map<MetricName, Instrument>()
  for (const [name, spec] of Object.entries(METRICS) as [MetricName, MetricSpec][]) {
    const common = { name, help: spec.help, labelNames: [...spec.labels], registers: [registry] }
    instruments.set(
      name,
      spec.type === 'counter'
        ? new Counter(common)
        : spec.type === 'gauge'
          ? new Gauge(common)
          : new Histogram({ ...common, buckets: [...(spec.buckets ?? [])] }),
    )
  }
  const get = <T extends Instrument>(name: MetricName) => instruments.get(name) as T
  // The labelled child of each label set, kept: prom-client would otherwise sort and hash the label
  // object at every call (a hot-path cost of the API's request counter). Label sets are bounded.
  type Child = { inc(value: number): void; observe(value: number): void }
  const children = new Map<string, Child>()
  const child = (name: MetricName, labels: Labels) => {
    const names = METRICS[name].labels as readonly string[]
    let key: string = name
    for (const l of names) key += `\u0000${labels[l] ?? ''}`
    let c = children.get(key)
    if (c === undefined) {
      const values = names.map((l) => labels[l] ?? '')
      const instrument = instruments.get(name) as unknown as { labels(...v: string[]): Child }
      c = instrument.labels(...values)
      children.set(key, c)
    }
    return c
  }
  const hooks: (() => void)[] = []
  return {
    registry,
    inc(name, labels = {}, value = 1) {
      child(name, labels).inc(value)
    },
    observe(name, value, labels = {}) {
      child(name, labels).observe(value)
    },
    replace(name, series) {
      const gauge = get<Gauge<string>>(name)
      gauge.reset()
      for (const { labels, value } of series) gauge.set(labels, value)
    },
    beforeExpose(hook) {
      hooks.push(hook)
    },
    async expose(accept) {
      for (const hook of hooks) hook()
      const text = await registry.metrics()
      if (!wantsOpenMetrics(accept)) return { contentType: registry.contentType, body: text }
      return { contentType: OPENMETRICS, body: toOpenMetrics(text) }
    },
  }
}

const OPENMETRICS = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

/** Whether the Accept header lists OpenMetrics (Prometheus's scrape Accept does, first). */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  return accept !== undefined && /application\/openmetrics-text/i.test(accept)
}

/**
 * The classic text format as OpenMetrics 1.0: a counter family `x_total` is named `x` in its HELP
 * and TYPE lines (its samples keep `x_total`), blank lines go, and `# EOF` ends the exposition.
 */
export function toOpenMetrics(text: string): string {
  const counters = new Set<string>()
  for (const m of text.matchAll(/^# TYPE (\S+)_total counter$/gm)) counters.add(m[1]!)
  const lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const m = /^# (HELP|TYPE) (\S+)_total( .*)$/.exec(line)
      return m && counters.has(m[2]!) ? `# ${m[1]} ${m[2]}${m[3]}` : line
    })
  return `${lines.join('\n')}\n# EOF\n`
}
