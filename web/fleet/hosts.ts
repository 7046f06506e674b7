/**
 * The Fleet page's hosts table: hosts with a problem first (an expired lease, an unhealthy
 * device), at most 50 rows until "Show all" (`?hosts=all`), and a filter on the name (`?host=`),
 * both in the URL so Back and a bookmark keep them.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { healthMark, localTime } from '../format.js'
import { setQuery, type Route } from '../router.js'
import { hasProblem, HOST_ROWS, STATUS_RULE, visibleHosts, type Host } from './fleet-data.js'

/** A time: local, its UTC value in the title and (without the words) in `datetime`. */
export function Time({ value }: { value: string }): VNode {
  const t = localTime(value)
  return html`<time datetime=${t.title.replace(/ \(UTC\)$/, '')} title=${t.title}>${t.text}</time>`
}

function Lease({ host }: { host: Host }): VNode {
  if (host.lease === 'hidden') return html`<td class="muted">lease: not visible to you</td>`
  const mark = host.lease === 'held' ? healthMark('ok') : healthMark('failed')
  return html`<td class=${`tone-${mark.tone}`}>
    <span aria-hidden="true">${mark.icon} </span>${host.lease}
  </td>`
}

function Row({ host }: { host: Host }): VNode {
  const bad = host.unhealthy > 0 ? healthMark('failed') : undefined
  return html`<tr key=${host.host} data-host=${host.host}>
    <th scope="row">${host.host}</th>
    <${Lease} host=${host} />
    <td>
      ${
        host.lease === 'hidden'
          ? html`<span class="muted">not visible</span>`
          : html`<${Time} value=${host.lastSeen} />`
      }
    </td>
    <td>${host.devices}</td>
    <td class=${bad ? 'tone-bad' : ''}>
      ${bad ? html`<span aria-hidden="true">${bad.icon} </span>` : ''}${host.unhealthy}
    </td>
  </tr>`
}

function leaseNote(downAfter: number | null): VNode {
  if (downAfter !== null)
    return html`<p class="note" id="hosts-note">
      An agent holds its lease while it reports within ${downAfter} s.
    </p>`
  return html`<p class="note" id="hosts-note" data-testid="lease-refused">
    Agent leases are not shown: <code>GET /v1/status</code> is policy rule
    <code>${STATUS_RULE}</code>, which does not let you read it (by default admins and project
    managers may). The hosts below are those with devices.
  </p>`
}

export function Hosts({
  hosts,
  downAfter,
  route,
}: {
  hosts: Host[]
  downAfter: number | null
  route: Route
}): VNode {
  const filter = route.query.get('host') ?? ''
  const all = route.query.get('hosts') === 'all'
  const { rows, matching } = visibleHosts(hosts, filter, all)
  const problems = hosts.filter(hasProblem).length
  return html`<section aria-labelledby="hosts-h">
    <h2 id="hosts-h">
      Hosts <span class="count" data-testid="host-total">${hosts.length}</span>
      ${
        problems > 0
          ? html`<span class="count tone-bad" data-testid="host-problems"
              >${` (${problems} with a problem, listed first)`}</span
            >`
          : ''
      }
    </h2>
    ${leaseNote(downAfter)}
    <div class="host-filter">
      <label for="host-filter">Filter hosts by name</label>
      <input
        id="host-filter"
        type="search"
        value=${filter}
        onInput=${(e: Event) =>
          setQuery({ host: (e.currentTarget as HTMLInputElement).value }, true)}
      />
    </div>
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
          ${rows.map((h) => html`<${Row} key=${h.host} host=${h} />`)}
        </tbody>
      </table>
    </div>
    <p class="note" data-testid="hosts-shown">
      ${
        rows.length === matching
          ? `${matching} ${filter === '' ? '' : 'matching '}host${matching === 1 ? '' : 's'} shown.`
          : `The first ${rows.length} of ${matching} ${filter === '' ? '' : 'matching '}hosts shown.`
      }
      ${' '}
      ${
        !all && matching > HOST_ROWS
          ? html`<button type="button" onClick=${() => setQuery({ hosts: 'all' })}>
              Show all ${matching}
            </button>`
          : ''
      }
      ${
        all && matching > HOST_ROWS
          ? html`<button type="button" onClick=${() => setQuery({ hosts: undefined })}>
              Show the first ${HOST_ROWS}
            </button>`
          : ''
      }
    </p>
  </section>`
}
