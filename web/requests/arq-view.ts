/** One accelerator request, every field of GET /v2/accelerator_requests/<uuid> at 2.10. */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { localTime } from '../format.js'
import { Show, useLoad } from '../load.js'
import { reasonOf, StateCell } from './arq-table.js'
import { useArqEvents } from './arq-events.js'
import { FAILED_STATES, loadArq, type Arq } from './requests-data.js'

function When({ value }: { value: string | null }): VNode {
  if (value === null) return html`—`
  const t = localTime(value)
  return html`<time datetime=${t.title.replace(/ \(UTC\)$/, '')} title=${t.title}>${t.text}</time>`
}

const text = (v: string | number | null | undefined) =>
  v === null || v === undefined || v === '' ? '—' : String(v)

function Fields({ arq }: { arq: Arq }): VNode {
  const info = Object.entries(arq.attach_handle_info)
  const rows: [string, VNode | string][] = [
    ['uuid', html`<code>${arq.uuid}</code>`],
    ['state', html`<${StateCell} state=${arq.state} />`],
    ['state_reason', text(arq.state_reason)],
    ['device_profile_name', text(arq.device_profile_name)],
    ['device_profile_group_id', text(arq.device_profile_group_id)],
    ['project_id', text(arq.project_id)],
    ['instance_uuid', text(arq.instance_uuid)],
    ['hostname', text(arq.hostname)],
    ['device_rp_uuid', text(arq.device_rp_uuid)],
    ['attach_handle_type', text(arq.attach_handle_type)],
    ['attach_handle_uuid', text(arq.attach_handle_uuid)],
    [
      'attach_handle_info',
      info.length === 0
        ? '—'
        : html`<ul class="plain">
            ${info.map(([k, v]) => html`<li key=${k}><code>${k}</code>: ${v}</li>`)}
          </ul>`,
    ],
    ['created_at', html`<${When} value=${arq.created_at} />`],
    ['updated_at', html`<${When} value=${arq.updated_at} />`],
    [
      'links',
      (arq.links ?? []).length === 0
        ? '—'
        : html`<ul class="plain">
            ${arq.links!.map((l) => html`<li key=${l.href}>${l.rel}: <code>${l.href}</code></li>`)}
          </ul>`,
    ],
  ]
  return html`<dl class="fields" data-testid="arq-fields">
    ${rows.map(
      ([k, v]) =>
        html`<div key=${k} data-field=${k}>
          <dt>${k}</dt>
          <dd>${v}</dd>
        </div>`,
    )}
  </dl>`
}

function Detail({ arq }: { arq: Arq }): VNode {
  const failed = FAILED_STATES.includes(arq.state)
  return html`<section aria-labelledby="arq-h">
    <h2 id="arq-h">Request <code>${arq.uuid}</code></h2>
    ${
      failed
        ? html`<p class="tone-bad failure" data-testid="failure">
            <span aria-hidden="true">✕ </span>${arq.state}: ${reasonOf(arq)}
          </p>`
        : ''
    }
    <${Fields} arq=${arq} />
  </section>`
}

export function ArqView({ uuid }: { uuid: string }): VNode {
  const { loaded, reload } = useLoad(() => loadArq(uuid), [uuid])
  useArqEvents(reload, uuid)
  return html`<p><a href="/dashboard/requests">← All requests</a></p>
    <${Show}
      loaded=${loaded}
      what=${`accelerator request ${uuid}`}
      draw=${(arq: Arq) => html`<${Detail} arq=${arq} />`}
    />`
}
