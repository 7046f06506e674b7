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
import { Gauge, Registry, collectDefaultMetrics, type PrometheusContentType } from 'prom-client'
import {
  METRICS,
  type Labels,
  type MetricName,
  type MetricSpec,
  type Metrics,
} from '../../domain/metrics.js'
import { FastCounter, FastHistogram } from './fast-metrics.js'

export interface PrometheusMetrics extends Metrics {
  /** The exposition for a scraper whose Accept header is `accept` (see above). */
  expose(accept?: string): Promise<{ contentType: string; body: string }>
  readonly registry: Registry<PrometheusContentType>
}

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
  // Counters and histograms are recorded on the hot path: fast-metrics.ts; gauges are prom-client's.
  const counters = new Map<MetricName, FastCounter>()
  const histograms = new Map<MetricName, FastHistogram>()
  const gauges = new Map<MetricName, Gauge<string>>()
  for (const [name, spec] of Object.entries(METRICS) as [MetricName, MetricSpec][]) {
    const labels = [...spec.labels]
    if (spec.type === 'gauge') {
      gauges.set(
        name,
        new Gauge({ name, help: spec.help, labelNames: labels, registers: [registry] }),
      )
      continue
    }
    const metric =
      spec.type === 'counter'
        ? new FastCounter(name, spec.help, labels)
        : new FastHistogram(name, spec.help, labels, spec.buckets ?? [])
    if (metric instanceof FastCounter) counters.set(name, metric)
    else histograms.set(name, metric)
    registry.registerMetric(metric as unknown as Parameters<typeof registry.registerMetric>[0])
  }
  const hooks: (() => void)[] = []
  return {
    registry,
    inc(name, labels = {}, value = 1) {
      counters.get(name)!.inc(labels, value)
    },
    observe(name, value, labels = {}) {
      histograms.get(name)!.observe(labels, value)
    },
    replace(name, series) {
      const gauge = gauges.get(name)!
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

export const OPENMETRICS = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

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
