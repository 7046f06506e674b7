/**
 * The Fleet page: hosts and their agents' leases, device counts, the unhealthy devices, and
 * capacity per resource class. It reads again, quietly, when an event about a device, deployable,
 * agent or request arrives (debounced, so a storm of events is one read), and marks
 * `fleet-drawn` in the browser's performance timeline each time its data is drawn
 * (bench/dashboard.ts measures it).
 */
import './fleet.css'
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { BUCKETS, countsOf, loadFleet, type CapacityRow, type Fleet } from './fleet-data.js'
import { Hosts } from './hosts.js'
import { Unhealthy } from './unhealthy.js'
import { healthMark } from '../format.js'
import {
  LIVE_WORDS,
  subscribeEvents,
  watchLiveState,
  whenLive,
  type LiveEvent,
  type LiveState,
} from '../live.js'
import { Show, useLoad } from '../load.js'
import type { Page } from '../page.js'
import type { Route } from '../router.js'

/** What the page draws: events about these resources read it again. */
const DRAWN: readonly LiveEvent['resource_type'][] = ['device', 'deployable', 'agent', 'arq']
/** Events closer together than this are one read. */
export const LIVE_DEBOUNCE_MS = 300

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

function Counts({ summary }: { summary: Fleet['summary'] }): VNode {
  const keys = ['type', 'lifecycle', 'status', 'health'] as const
  return html`<section aria-labelledby="devices-h">
    <h2 id="devices-h">
      Devices <span class="count" data-testid="device-total">${summary.total}</span>
    </h2>
    <div class="cards">
      ${keys.map(
        (k) =>
          html`<div class="card" key=${k}>
            <h3>By ${k}</h3>
            <dl data-testid=${`by-${k}`}>
              ${countsOf(summary[`by_${k}`]).map(([v, n]) => {
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
      ${BUCKETS.map(
        (b) =>
          html`<li key=${b} data-bucket=${b}>
            <span class=${`swatch seg-${b}`} aria-hidden="true"></span>${`${b}: `}
            <strong>${row[b]}</strong>
          </li>`,
      )}
    </ul>
  </div>`
}

export function FleetPage({ fleet, route }: { fleet: Fleet; route: Route }): VNode {
  useEffect(() => {
    performance.mark('fleet-drawn')
  }, [fleet])
  if (fleet.hosts.length === 0 && fleet.summary.total === 0) return Empty()
  const noDevices = html`<p class="empty">
    No devices reported yet. Check <code>[agent] enabled_drivers</code> on these hosts
    (docs/drivers.md), and <code>cyborg driver-list --host HOST</code>.
  </p>`
  return html`<${Hosts} hosts=${fleet.hosts} downAfter=${fleet.downAfterSeconds} route=${route} />
    ${
      fleet.summary.total === 0
        ? noDevices
        : html`<${Counts} summary=${fleet.summary} />
            <${Unhealthy} unhealthy=${fleet.summary.unhealthy} />`
    }
    <section aria-labelledby="capacity-h">
      <h2 id="capacity-h">Capacity per resource class</h2>
      ${
        fleet.capacity.length === 0
          ? html`<p>No deployables yet.</p>`
          : fleet.capacity.map((r) => html`<${Bar} key=${r.resource_class ?? ''} row=${r} />`)
      }
    </section>`
}

/**
 * Calls `reload` once per burst of events about what the page draws, while it is shown; answers
 * the stream's state. The page's reads wait for the stream first ({@link whenLive}).
 */
function useLiveReload(reload: () => void): LiveState {
  const [state, setState] = useState<LiveState>('closed')
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const unwatch = watchLiveState(setState)
    const unsubscribe = subscribeEvents((e) => {
      if (!DRAWN.includes(e.resource_type) || timer !== undefined) return
      timer = setTimeout(() => {
        timer = undefined
        reload()
      }, LIVE_DEBOUNCE_MS)
    })
    return () => {
      unsubscribe()
      unwatch()
      clearTimeout(timer)
    }
  }, [])
  return state
}

/** The fleet, read once the event stream is open (at most 1 s later), so no change falls between. */
async function readFleet(): Promise<Fleet> {
  await whenLive(1000)
  return loadFleet()
}

function Fleet({ route }: { route: Route }): VNode {
  const { loaded, reload } = useLoad(readFleet, [])
  const live = useLiveReload(() => reload(true))
  return html`<p class="note" role="status" data-testid="live-state">${LIVE_WORDS[live]}</p>
    <${Show}
      loaded=${loaded}
      what="the fleet"
      draw=${(fleet: Fleet) => html`<${FleetPage} fleet=${fleet} route=${route} />`}
    />`
}

export const fleetPage: Page = { id: 'fleet', title: 'Fleet', draw: Fleet }
