/** The Fleet page: hosts and their agents' leases, device counts, and capacity per resource class. */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import {
  BUCKETS,
  countBy,
  type CapacityRow,
  type Device,
  type Fleet,
  type Host,
} from './fleet-data.js'
import { healthMark, localTime } from '../format.js'
import { Show, useLoad } from '../load.js'
import type { Page } from '../page.js'
import { loadFleet } from './fleet-data.js'

function Empty(): VNode {
  return html`<section aria-labelledby="empty-h" class="empty">
    <h2 id="empty-h">No hosts yet</h2>
    <p>No agent has reported to this Cyborg. To fill the fleet:</p>
    <ol>
      <li>
        run <code>cyborg agent</code> (or <code>cyborg up</code>) on each compute host, with the
        drivers of its accelerators in <code>[agent] enabled_drivers</code>;
      </li>
      <li>check it with <code>cyborg status</code>: each agent appears once it has reported;</li>
      <li>reload this page.</li>
    </ol>
    <p>See docs/agent.md and docs/operations.md.</p>
  </section>`
}

function Hosts({ hosts, downAfter }: { hosts: Host[]; downAfter: number }): VNode {
  return html`<section aria-labelledby="hosts-h">
    <h2 id="hosts-h">Hosts <span class="count">${hosts.length}</span></h2>
    <p class="note" id="hosts-note">
      An agent holds its lease while it reports within ${downAfter} s.
    </p>
    <div class="scroll" tabindex="0" role="region" aria-label="Hosts table">
      <table aria-describedby="hosts-note">
        <thead>
          <tr>
            <th scope="col">Host</th>
            <th scope="col">Agent lease</th>
            <th scope="col">Last report</th>
            <th scope="col">Devices</th>
            <th scope="col">Unhealthy</th>
          </tr>
        </thead>
        <tbody>
          ${hosts.map((h) => {
            const t = localTime(h.lastSeen)
            const lease = h.state === 'up' ? healthMark('ok') : healthMark('failed')
            return html`<tr key=${h.host} data-host=${h.host}>
              <th scope="row">${h.host}</th>
              <td class=${`tone-${lease.tone}`}>
                <span aria-hidden="true">${lease.icon} </span
                >${h.state === 'up' ? 'held' : 'expired'}
              </td>
              <td><time datetime=${t.title} title=${t.title}>${t.text}</time></td>
              <td>${h.devices}</td>
              <td>${h.unhealthy}</td>
            </tr>`
          })}
        </tbody>
      </table>
    </div>
  </section>`
}

function Counts({ devices }: { devices: Device[] }): VNode {
  const keys = ['type', 'lifecycle', 'status', 'health'] as const
  return html`<section aria-labelledby="devices-h">
    <h2 id="devices-h">
      Devices <span class="count" data-testid="device-total">${devices.length}</span>
    </h2>
    <div class="cards">
      ${keys.map(
        (k) =>
          html`<div class="card" key=${k}>
            <h3>By ${k}</h3>
            <dl data-testid=${`by-${k}`}>
              ${countBy(devices, k).map(([v, n]) => {
                const mark = k === 'health' ? healthMark(v) : undefined
                return html`<div class=${mark ? `tone-${mark.tone}` : ''} data-value=${v}>
                  <dt>${mark ? html`<span aria-hidden="true">${mark.icon} </span>` : ''}${v}</dt>
                  <dd>${n}</dd>
                </div>`
              })}
            </dl>
          </div>`,
      )}
    </div>
  </section>`
}

function Bar({ row }: { row: CapacityRow }): VNode {
  const name = row.resource_class ?? '(no resource class)'
  const label = BUCKETS.map((b) => `${row[b]} ${b}`).join(', ')
  return html`<div class="capacity" data-rc=${name}>
    <h3>${name} <span class="count">${row.total} units</span></h3>
    <div class="bar" role="img" aria-label=${`${name}: ${label}`}>
      ${BUCKETS.filter((b) => row[b] > 0).map(
        (b) =>
          html`<span
            key=${b}
            class=${`seg seg-${b}`}
            style=${`flex-grow:${row[b]}`}
            title=${`${row[b]} ${b}`}
          ></span>`,
      )}
    </div>
    <ul class="legend">
      ${BUCKETS.map((b) => html`<li key=${b} data-bucket=${b}><span class=${`swatch seg-${b}`} aria-hidden="true"></span>${b}: <strong>${row[b]}</strong></li>`)}
    </ul>
  </div>`
}

export function FleetPage({ fleet }: { fleet: Fleet }): VNode {
  if (fleet.hosts.length === 0 && fleet.devices.length === 0) return Empty()
  const noDevices = html`<p class="empty">
    No devices reported yet. Check <code>[agent] enabled_drivers</code> on these hosts
    (docs/drivers.md), and <code>cyborg driver-list --host HOST</code>.
  </p>`
  return html`<${Hosts} hosts=${fleet.hosts} downAfter=${fleet.downAfterSeconds} />
    ${fleet.devices.length === 0 ? noDevices : html`<${Counts} devices=${fleet.devices} />`}
    <section aria-labelledby="capacity-h">
      <h2 id="capacity-h">Capacity per resource class</h2>
      ${fleet.capacity.length === 0 ? html`<p>No deployables yet.</p>` : fleet.capacity.map((r) => html`<${Bar} key=${r.resource_class ?? ''} row=${r} />`)}
    </section>`
}

function Fleet(): VNode {
  const { loaded } = useLoad(loadFleet, [])
  return html`<${Show}
    loaded=${loaded}
    what="the fleet"
    draw=${(fleet: Fleet) => html`<${FleetPage} fleet=${fleet} />`}
  />`
}

export const fleetPage: Page = { id: 'fleet', title: 'Fleet', draw: Fleet }
