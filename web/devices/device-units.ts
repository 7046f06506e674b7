/**
 * A device's units: its attach handles with their state (`GET /v2/devices/{uuid}/attach_handles`,
 * 2.10), and the deployables and attributes they belong to (`GET /v2/deployables/{uuid}`,
 * `GET /v2/attributes?deployable_id=`), each section read and refused on its own.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { getJson } from '../api.js'
import { Show, useLoad } from '../load.js'

export interface Handle {
  uuid: string
  deployable_id: number
  deployable_uuid: string
  deployable_name: string
  attach_type: string
  attach_info: Record<string, unknown>
  in_use: boolean
  state: string
  clean_state: string | null
  reconfig_kind: string | null
  arq_uuid: string | null
  arq_state: string | null
  instance_uuid: string | null
  project_id: string | null
}

interface Deployable {
  uuid: string
  name: string
  num_accelerators: number
  rp_uuid: string | null
  driver_name: string | null
  bitstream_id: string | null
}

interface Attribute {
  uuid: string
  deployable_id: number
  key: string
  value: string
}

/** A unit's state with an icon, so that colour is not the only signal. */
const STATE_MARK: Record<string, { icon: string; tone: string; word: string }> = {
  free: { icon: '○', tone: 'ok', word: 'free' },
  in_use: { icon: '●', tone: 'info', word: 'in use' },
  cleaning: { icon: '⟳', tone: 'warn', word: 'cleaning' },
  clean_failed: { icon: '✕', tone: 'bad', word: 'clean failed' },
  reconfiguring: { icon: '⚙', tone: 'warn', word: 'reconfiguring' },
}

/** A PCI address as lspci writes it; any other address as its fields. */
function address(info: Record<string, unknown>): string {
  const { domain, bus, device, function: fn } = info
  if ([domain, bus, device, fn].every((v) => typeof v === 'string'))
    return `${String(domain)}:${String(bus)}:${String(device)}.${String(fn)}`
  return Object.entries(info)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ')
}

function Handles({ handles }: { handles: Handle[] }): VNode {
  if (handles.length === 0) return html`<p>No attach handles.</p>`
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Attach handles table">
    <table data-testid="handles">
      <thead>
        <tr>
          <th scope="col">Address</th>
          <th scope="col">State</th>
          <th scope="col">Type</th>
          <th scope="col">Deployable</th>
          <th scope="col">Held by</th>
          <th scope="col">UUID</th>
        </tr>
      </thead>
      <tbody>
        ${handles.map((h) => {
          const m = STATE_MARK[h.state] ?? { icon: '?', tone: 'warn', word: h.state }
          return html`<tr key=${h.uuid} data-state=${h.state}>
            <th scope="row"><code>${address(h.attach_info)}</code></th>
            <td class=${`tone-${m.tone}`}><span aria-hidden="true">${m.icon} </span>${m.word}</td>
            <td>${h.attach_type}</td>
            <td>${h.deployable_name}</td>
            <td>
              ${
                h.arq_uuid === null
                  ? '—'
                  : html`request <code>${h.arq_uuid}</code> (${h.arq_state})${
                        h.instance_uuid ? html`, instance <code>${h.instance_uuid}</code>` : ''
                      }`
              }
            </td>
            <td><code>${h.uuid}</code></td>
          </tr>`
        })}
      </tbody>
    </table>
  </div>`
}

/** Distinct values of `pick` over `handles`, in their order. */
function distinct<T>(handles: Handle[], pick: (h: Handle) => T): T[] {
  return [...new Set(handles.map(pick))]
}

function Deployables({ handles }: { handles: Handle[] }): VNode {
  const uuids = distinct(handles, (h) => h.deployable_uuid)
  const { loaded } = useLoad(
    () => Promise.all(uuids.map((u) => getJson<Deployable>(`/v2/deployables/${u}`))),
    [uuids.join()],
  )
  return html`<section aria-labelledby="deployables-h">
    <h3 id="deployables-h">Deployables</h3>
    <${Show}
      loaded=${loaded}
      what="the deployables"
      draw=${(ds: Deployable[]) =>
        ds.length === 0
          ? html`<p>No deployables.</p>`
          : html`<div class="scroll" tabindex="0" role="region" aria-label="Deployables table">
              <table data-testid="deployables">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Accelerators</th>
                    <th scope="col">Driver</th>
                    <th scope="col">Resource provider</th>
                  </tr>
                </thead>
                <tbody>
                  ${ds.map(
                    (d) =>
                      html`<tr key=${d.uuid}>
                        <th scope="row">${d.name}</th>
                        <td>${d.num_accelerators}</td>
                        <td>${d.driver_name ?? '—'}</td>
                        <td><code>${d.rp_uuid ?? 'not in Placement'}</code></td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`}
    />
  </section>`
}

function Attributes({ handles }: { handles: Handle[] }): VNode {
  const ids = distinct(handles, (h) => h.deployable_id)
  const names = new Map(handles.map((h) => [h.deployable_id, h.deployable_name]))
  const { loaded } = useLoad(
    () =>
      Promise.all(
        ids.map((id) => getJson<{ attributes: Attribute[] }>(`/v2/attributes?deployable_id=${id}`)),
      ).then((pages) => pages.flatMap((p) => p.attributes)),
    [ids.join()],
  )
  return html`<section aria-labelledby="attributes-h">
    <h3 id="attributes-h">Attributes</h3>
    <${Show}
      loaded=${loaded}
      what="the attributes"
      draw=${(as: Attribute[]) =>
        as.length === 0
          ? html`<p>No attributes.</p>`
          : html`<dl class="pairs" data-testid="attributes">
              ${as.map(
                (a) =>
                  html`<div key=${a.uuid}>
                    <dt>
                      ${a.key} <span class="count">(${names.get(a.deployable_id) ?? ''})</span>
                    </dt>
                    <dd>${a.value}</dd>
                  </div>`,
              )}
            </dl>`}
    />
  </section>`
}

/** The units of device `uuid`: handles, then their deployables and attributes. */
export function Units({ uuid }: { uuid: string }): VNode {
  const { loaded } = useLoad(
    () => getJson<{ attach_handles: Handle[] }>(`/v2/devices/${uuid}/attach_handles`, 10),
    [uuid],
  )
  return html`<section aria-labelledby="handles-h">
    <h2 id="handles-h">Units</h2>
    <h3>Attach handles</h3>
    <${Show}
      loaded=${loaded}
      what="the attach handles (the deployables and attributes are found through them)"
      draw=${({ attach_handles: hs }: { attach_handles: Handle[] }) =>
        html`<${Handles} handles=${hs} />
          <${Deployables} handles=${hs} />
          <${Attributes} handles=${hs} />`}
    />
  </section>`
}
