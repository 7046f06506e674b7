/**
 * The device page (`/dashboard/devices/<uuid>`): the device's fields and admin actions, its units
 * (handles, deployables, attributes), its health history, custody timeline and latest telemetry.
 * Each section reads on its own, so a refused read shows its own error and the rest still shows.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useRef } from 'preact/hooks'
import { getJson } from '../api.js'
import { healthMark, localTime } from '../format.js'
import { refreshAll, Show, useLoad } from '../load.js'
import { Actions, type DeviceFields } from './device-actions.js'
import { History } from './device-history.js'
import { Units } from './device-units.js'

interface Device extends DeviceFields {
  type: string
  vendor: string
  model: string
  std_board_info: string | null
  vendor_board_info: string | null
  lifecycle_reason?: string | null
  health?: string
  health_reason?: string | null
  health_updated_at?: string | null
  device_state?: string
  created_at: string
  updated_at: string | null
}

function Field({ name, children }: { name: string; children: unknown }): VNode {
  return html`<div>
    <dt>${name}</dt>
    <dd>${children}</dd>
  </div>`
}

function Fields({ d }: { d: Device }): VNode {
  const mark = healthMark(d.health ?? 'unknown')
  const time = (v: string | null | undefined) => {
    if (v === null || v === undefined) return '—'
    const t = localTime(v)
    return html`<time datetime=${t.title} title=${t.title}>${t.text}</time>`
  }
  return html`<dl class="pairs fields" data-testid="device-fields" data-health=${d.health}>
    <${Field} name="Host">${d.hostname}<//>
    <${Field} name="Type">${d.type}<//>
    <${Field} name="Vendor, model">${d.vendor} ${d.model}<//>
    <${Field} name="Health">
      <span class=${`tone-${mark.tone}`}
        ><span aria-hidden="true">${mark.icon} </span>${mark.word}</span
      >
      ${d.health_reason ? html` <span class="reason">${d.health_reason}</span>` : ''}
    <//>
    <${Field} name="Health since">${time(d.health_updated_at)}<//>
    <${Field} name="Lifecycle"
      >${d.lifecycle ?? '—'}${d.lifecycle_reason ? ` (${d.lifecycle_reason})` : ''}<//
    >
    <${Field} name="Status">${d.status ?? '—'}<//>
    <${Field} name="State">${d.device_state ?? '—'}<//>
    <${Field} name="Board">${d.std_board_info ?? '—'}<//>
    <${Field} name="Created">${time(d.created_at)}<//>
    <${Field} name="Updated">${time(d.updated_at)}<//>
  </dl>`
}

export function DevicePage({ uuid }: { uuid: string }): VNode {
  const { loaded } = useLoad(() => getJson<Device>(`/v2/devices/${uuid}`, 9), [uuid])
  // The last device read stays while it is read again (after an action), so that the actions and
  // their answer stay on the page.
  const last = useRef<Device | undefined>(undefined)
  if (loaded !== undefined && 'value' in loaded) last.current = loaded.value
  const device = last.current
  return html`<p><a href="/dashboard/devices">← All devices</a></p>
    <h2 class="device-h">Device <code>${uuid}</code></h2>
    <${Show} loaded=${loaded} what="the device" draw=${(d: Device) => html`<${Fields} d=${d} />`} />
    ${device === undefined ? '' : html`<${Actions} device=${device} onDone=${refreshAll} />`}
    <${Units} uuid=${uuid} />
    <${History} uuid=${uuid} host=${device?.hostname} />`
}
