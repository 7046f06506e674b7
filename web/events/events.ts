/**
 * The Events page: the recent history (`GET /v2/events`), then every event as the API streams it
 * (web/live.ts), newest on top, with filters in the URL and a Pause button.
 */
import './events.css'
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { localTime } from '../format.js'
import {
  liveMatches,
  subscribeEvents,
  watchLiveState,
  LIVE_WORDS,
  type LiveEvent,
  type LiveFilter,
  type LiveState,
} from '../live.js'
import { Show, useLoad } from '../load.js'
import type { Page } from '../page.js'
import { setQuery, type Route } from '../router.js'
import { addToFeed, filterOf, loadHistory, MAX_ROWS, summaryOf } from './events-data.js'
import { EventFilters, type FilterPatch } from './event-filters.js'

function Empty(): VNode {
  return html`<section aria-labelledby="empty-h" class="empty">
    <h2 id="empty-h">No events yet</h2>
    <p>
      Every change of state writes an event, and they appear here as they happen: a device found,
      removed, enabled or disabled, its health changing (a fenced GPU is an
      <strong>ERROR</strong>), cleaned; an accelerator request created, bound, unbound or deleted; a
      driver installed or removed; an agent's lease lost or regained.
    </p>
    <p>
      Sent events are kept for <code>[events] retention_hours</code> (24 h by default), so older
      ones are gone. With filters set, try clearing them.
    </p>
  </section>`
}

function Priority({ e }: { e: LiveEvent }): VNode {
  return e.priority === 'ERROR'
    ? html`<span class="tone-bad"><span aria-hidden="true">⚠ </span>ERROR</span>`
    : html`<span><span aria-hidden="true">ℹ </span>INFO</span>`
}

function Resource({ e }: { e: LiveEvent }): VNode {
  const uuid =
    e.resource_type === 'device'
      ? html`<a href=${`/dashboard/devices/${encodeURIComponent(e.resource_uuid)}`}
          >${e.resource_uuid}</a
        >`
      : html`<span>${e.resource_uuid}</span>`
  return html`<span class="rtype">${e.resource_type}</span> ${uuid}`
}

function Row({ e }: { e: LiveEvent }): VNode {
  const t = localTime(e.created_at)
  return html`<tr
    data-event-id=${e.id}
    data-event-type=${e.event_type}
    data-resource=${e.resource_uuid}
    class=${e.priority === 'ERROR' ? 'error' : undefined}
  >
    <td><time datetime=${t.title} title=${t.title}>${t.text}</time></td>
    <td><${Priority} e=${e} /></td>
    <th scope="row">${e.event_type}</th>
    <td><${Resource} e=${e} /></td>
    <td>${e.project_id ?? '—'}</td>
    <td>${summaryOf(e)}</td>
  </tr>`
}

interface Live {
  /** Events since the page opened (or its filters changed), shown. */
  fresh: LiveEvent[]
  /** Events that came while paused, not shown yet. */
  held: LiveEvent[]
  paused: boolean
}

/**
 * The live part: subscribed once while the page is shown (so no event falls between the history's
 * read and the stream), filtered here by the URL's filters.
 */
function useLive(filter: LiveFilter, key: string) {
  const [live, setLive] = useState<Live>({ fresh: [], held: [], paused: false })
  const [state, setState] = useState<LiveState>('closed')
  const filterRef = useRef(filter)
  filterRef.current = filter
  useEffect(() => setLive((l) => ({ ...l, fresh: [], held: [] })), [key])
  useEffect(() => watchLiveState(setState), [])
  useEffect(
    () =>
      subscribeEvents((e) => {
        if (!liveMatches(filterRef.current, e)) return
        setLive((l) =>
          l.paused
            ? { ...l, held: addToFeed(l.held, [e]) }
            : { ...l, fresh: addToFeed(l.fresh, [e]) },
        )
      }),
    [],
  )
  const toggle = () =>
    setLive((l) =>
      l.paused
        ? { fresh: addToFeed(l.fresh, l.held), held: [], paused: false }
        : { ...l, paused: true },
    )
  return { live, state, toggle }
}

function Feed({ feed }: { feed: LiveEvent[] }): VNode {
  if (feed.length === 0) return html`<${Empty} />`
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Events table">
    <table>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Priority</th>
          <th scope="col">Event</th>
          <th scope="col">Resource</th>
          <th scope="col">Project</th>
          <th scope="col">What</th>
        </tr>
      </thead>
      <tbody>
        ${feed.map((e) => html`<${Row} key=${e.id} e=${e} />`)}
      </tbody>
    </table>
  </div>`
}

function EventsView({ route }: { route: Route }): VNode {
  const filter = filterOf(route.query)
  const key = JSON.stringify(filter)
  const { live, state, toggle } = useLive(filter, key)
  const { loaded } = useLoad(() => loadHistory(filter), [key])
  return html`<${EventFilters} filter=${filter} onChange=${(p: FilterPatch) => setQuery(p)} />
    <div class="feedbar">
      <button type="button" aria-pressed=${live.paused} onClick=${toggle}>
        ${live.paused ? 'Resume' : 'Pause'}
      </button>
      <span role="status" class="note" data-testid="live-state">
        ${live.paused ? `⏸ paused, ${live.held.length} new held` : LIVE_WORDS[state]}
      </span>
      <span class="note">Newest on top; the last ${MAX_ROWS} are kept.</span>
    </div>
    <${Show}
      loaded=${loaded}
      what="the events"
      draw=${(history: LiveEvent[]) => html`<${Feed} feed=${addToFeed(history, live.fresh)} />`}
    />`
}

export const eventsPage: Page = {
  id: 'events',
  title: 'Events',
  draw: EventsView,
}
