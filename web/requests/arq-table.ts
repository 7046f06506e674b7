/** The Requests page's table: one row a request, a failed one marked with ✕, its state and reason. */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { FAILED_STATES, stateMark, type Arq } from './requests-data.js'

/** What a failed request's reason cell says when the API no longer holds the reason. */
export const REASON_GONE =
  'not kept: its failure event is older than [events] retention_hours (docs/api-v2.md)'

/** The state, with its icon and word (never colour alone): `✕ BindFailed`, `✓ Bound`. */
export function StateCell({ state }: { state: string }): VNode {
  const mark = stateMark(state)
  return html`<span class=${mark.tone && `tone-${mark.tone}`}
    ><span aria-hidden="true">${mark.icon} </span>${state}</span
  >`
}

/** A long id, shortened to its first 8 characters; the whole one in the title (hover). */
function Short({ id }: { id: string | null }): VNode {
  if (id === null) return html`—`
  return html`<span class="uuid" title=${id}>${id.length > 13 ? `${id.slice(0, 8)}…` : id}</span>`
}

/** A failed request's reason; nothing for the others. */
export function reasonOf(a: Arq): string {
  if (!FAILED_STATES.includes(a.state)) return ''
  return a.state_reason ?? REASON_GONE
}

export function ArqTable({ arqs }: { arqs: Arq[] }): VNode {
  if (arqs.length === 0) return html`<p role="status">No request matches these filters.</p>`
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Requests table">
    <table class="arqs">
      <thead>
        <tr>
          <th scope="col">Request</th>
          <th scope="col">State</th>
          <th scope="col">Device profile</th>
          <th scope="col">Project</th>
          <th scope="col">Instance</th>
          <th scope="col">Host</th>
          <th scope="col">Attach handle</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        ${arqs.map(
          (a) =>
            html`<tr key=${a.uuid} data-uuid=${a.uuid} data-state=${a.state}>
              <th scope="row">
                <a class="uuid" href=${`/dashboard/requests/${a.uuid}`}>${a.uuid}</a>
              </th>
              <td><${StateCell} state=${a.state} /></td>
              <td>${a.device_profile_name}</td>
              <td><${Short} id=${a.project_id} /></td>
              <td><${Short} id=${a.instance_uuid} /></td>
              <td>${a.hostname ?? '—'}</td>
              <td>${a.attach_handle_type || '—'}</td>
              <td class="reason" data-testid="reason">${reasonOf(a)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`
}
