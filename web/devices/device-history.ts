/**
 * What happened to a device: its health history (`GET /v2/events`, 2.10), its custody timeline
 * (`GET /v2/custody?device_uuid=`, 2.8) and its latest telemetry (`GET /v1/telemetry`), each read
 * and refused on its own.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { ApiCallError, getJson } from '../api.js'
import { healthMark, localTime } from '../format.js'
import { Show, useLoad } from '../load.js'

interface DeviceEvent {
  uuid: string
  event_type: string
  priority: string
  payload: Record<string, unknown> | null
  created_at: string
}

interface CustodyRecord {
  uuid: string
  kind: string
  handle_uuid: string | null
  project_id: string | null
  instance_uuid: string | null
  bound_at: string | null
  released_at: string | null
  clean_result: string | null
  cleaned_at: string | null
  created_at: string
}

interface Sample {
  device_uuid: string | null
  time: string | null
  received_at: string
  age_seconds: number
  values: Record<string, unknown>
}

/** How many of the newest records a section shows. */
const RECENT = 20

function Time({ at }: { at: string | null }): VNode {
  if (at === null) return html`—`
  const t = localTime(at)
  return html`<time datetime=${t.title} title=${t.title}>${t.text}</time>`
}

const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))

/**
 * A health change's words, `ok → failed: reason`, from the event's payload: a versioned object
 * (`cyborg_object.data` holds `health`, `health_reason`, `previous_health`; notifications.md).
 */
function change(payload: Record<string, unknown>): VNode {
  const inner = payload['cyborg_object.data']
  const p =
    typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : payload
  const to = p['health']
  const from = p['previous_health']
  const reason = p['health_reason']
  if (typeof to !== 'string') return html`${text(p)}`
  const m = healthMark(to)
  return html`${typeof from === 'string' ? `${from} → ` : ''}<span class=${`tone-${m.tone}`}
      ><span aria-hidden="true">${m.icon} </span>${m.word}</span
    >${reason ? `: ${text(reason)}` : ''}`
}

type History = { events: DeviceEvent[] } | 'absent'

function HealthHistory({ uuid }: { uuid: string }): VNode {
  const q = `resource_uuid=${uuid}&event_type=accelerator.device.health_changed&limit=${RECENT}`
  const { loaded } = useLoad<History>(
    () =>
      getJson<{ events: DeviceEvent[] }>(`/v2/events?${q}`, 10).catch((e: Error) => {
        if (e instanceof ApiCallError && e.status === 404) return 'absent' as const
        throw e
      }),
    [uuid],
  )
  const draw = (h: History) => {
    if (h === 'absent')
      return html`<p data-testid="health-history">
        Health history not available (this API has no GET /v2/events).
      </p>`
    if (h.events.length === 0)
      return html`<p data-testid="health-history">No health change recorded.</p>`
    return html`<ol class="timeline" data-testid="health-history">
      ${h.events.map((e) => html`<li key=${e.uuid}><${Time} at=${e.created_at} />: ${change(e.payload ?? {})}</li>`)}
    </ol>`
  }
  return html`<section aria-labelledby="health-h">
    <h2 id="health-h">Health history</h2>
    <${Show} loaded=${loaded} what="the health history" draw=${draw} />
  </section>`
}

function custodyLine(r: CustodyRecord): VNode {
  const who = r.instance_uuid ? html` instance <code>${r.instance_uuid}</code>` : ''
  const project = r.project_id ? ` (project ${r.project_id})` : ''
  if (r.kind === 'allocation')
    return html`allocated${who}${project} from <${Time} at=${r.bound_at} /> to
      <${Time} at=${r.released_at} />`
  if (r.kind === 'clean' || r.kind === 'override')
    return html`${r.kind}: ${r.clean_result ?? '—'} at
      <${Time} at=${r.cleaned_at ?? r.created_at} />${project}`
  return html`${r.kind} at <${Time} at=${r.created_at} />`
}

function Custody({ uuid }: { uuid: string }): VNode {
  const { loaded } = useLoad(
    () =>
      getJson<{ custody_records: CustodyRecord[] }>(
        `/v2/custody?device_uuid=${uuid}&sort_dir=desc&limit=${RECENT}`,
        8,
      ),
    [uuid],
  )
  return html`<section aria-labelledby="custody-h">
    <h2 id="custody-h">
      Custody timeline <span class="count">newest first, up to ${RECENT}</span>
    </h2>
    <${Show}
      loaded=${loaded}
      what="the custody ledger"
      draw=${({ custody_records: rs }: { custody_records: CustodyRecord[] }) =>
        rs.length === 0
          ? html`<p data-testid="custody">
              No custody record yet (no unit was allocated and released).
            </p>`
          : html`<ol class="timeline" data-testid="custody">
              ${rs.map((r) => html`<li key=${r.uuid} data-kind=${r.kind}>${custodyLine(r)}</li>`)}
            </ol>`}
    />
  </section>`
}

function Telemetry({ uuid, host }: { uuid: string; host: string }): VNode {
  const { loaded } = useLoad(
    () =>
      getJson<{ devices: Sample[] }>(`/v1/telemetry?hostname=${encodeURIComponent(host)}`).then(
        (r) => r.devices.find((s) => s.device_uuid === uuid),
      ),
    [uuid, host],
  )
  return html`<section aria-labelledby="telemetry-h">
    <h2 id="telemetry-h">Latest telemetry</h2>
    <${Show}
      loaded=${loaded}
      what="the telemetry"
      draw=${(s: Sample | undefined) =>
        s === undefined
          ? html`<p data-testid="telemetry">No sample heard from this device's agent yet.</p>`
          : html`<p class="note">
                Received <${Time} at=${s.received_at} /> (${s.age_seconds} s ago).
              </p>
              <dl class="pairs" data-testid="telemetry">
                ${Object.entries(s.values).map(
                  ([k, v]) =>
                    html`<div key=${k}>
                      <dt>${k}</dt>
                      <dd>${text(v)}</dd>
                    </div>`,
                )}
              </dl>`}
    />
  </section>`
}

/** The device's history sections; telemetry once its host is known. */
export function History({ uuid, host }: { uuid: string; host: string | undefined }): VNode {
  return html`<${HealthHistory} uuid=${uuid} />
    <${Custody} uuid=${uuid} />
    ${host === undefined ? '' : html`<${Telemetry} uuid=${uuid} host=${host} />`}`
}
