/**
 * The Fleet page's unhealthy devices (health not ok): each with its mark and word, its reason,
 * since when (local time, UTC in the title), and a link to its page; the newest change first, as
 * many as the summary lists (100), with how many there are in all.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { healthMark } from '../format.js'
import { Time } from './hosts.js'
import type { DeviceSummary, UnhealthyDevice } from './fleet-data.js'

function Row({ d }: { d: UnhealthyDevice }): VNode {
  const mark = healthMark(d.health)
  return html`<tr data-device=${d.uuid}>
    <td class=${`tone-${mark.tone}`}><span aria-hidden="true">${mark.icon} </span>${mark.word}</td>
    <th scope="row">
      <a href=${`/dashboard/devices/${encodeURIComponent(d.uuid)}`}
        >${`${d.type} ${d.uuid.slice(0, 8)}`}</a
      >
    </th>
    <td>${d.hostname}</td>
    <td class="reason">${d.health_reason ?? html`<span class="muted">no reason given</span>`}</td>
    <td><${Time} value=${d.health_since} /></td>
  </tr>`
}

export function Unhealthy({ unhealthy }: { unhealthy: DeviceSummary['unhealthy'] }): VNode {
  const { total, devices } = unhealthy
  return html`<section aria-labelledby="unhealthy-h" data-testid="unhealthy">
    <h2 id="unhealthy-h">
      Unhealthy devices <span class="count" data-testid="unhealthy-total">${total}</span>
    </h2>
    ${
      total === 0
        ? html`<p class="tone-ok"><span aria-hidden="true">✓ </span>Every device reports ok.</p>`
        : html`<p class="note" id="unhealthy-note">
              Health other than ok, the newest change
              first${
                devices.length < total ? `: the ${devices.length} most recent of ${total}` : ''
              }.
            </p>
            <div class="scroll" tabindex="0" role="region" aria-label="Unhealthy devices table">
              <table aria-describedby="unhealthy-note">
                <thead>
                  <tr>
                    <th scope="col">Health</th>
                    <th scope="col">Device</th>
                    <th scope="col">Host</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Since</th>
                  </tr>
                </thead>
                <tbody>
                  ${devices.map((d) => html`<${Row} key=${d.uuid} d=${d} />`)}
                </tbody>
              </table>
            </div>`
    }
  </section>`
}
