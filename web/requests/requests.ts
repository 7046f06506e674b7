/**
 * The Requests page: accelerator requests counted by state, filtered by state, project, instance
 * and host (all in the URL), a failed one with its reason; `/dashboard/requests/<uuid>` shows one.
 */
import './requests.css'
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { Show, useLoad } from '../load.js'
import type { Page } from '../page.js'
import type { Route } from '../router.js'
import { setQuery } from '../router.js'
import { useArqEvents } from './arq-events.js'
import { ArqView } from './arq-view.js'
import { ArqTable } from './arq-table.js'
import {
  applyFilter,
  ARQ_STATES,
  countByState,
  filterOf,
  loadArqs,
  pageOf,
  stateMark,
  valuesOf,
  type Arq,
  type ArqFilter,
} from './requests-data.js'

/** A link to this page with the query `query` changed by `patch` (the page number reset). */
export function hrefWith(
  query: URLSearchParams,
  patch: Record<string, string | undefined>,
): string {
  const q = new URLSearchParams(query)
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || v === '') q.delete(k)
    else q.set(k, v)
  }
  const s = q.toString()
  return `/dashboard/requests${s === '' ? '' : `?${s}`}`
}

function Counts({ arqs, query }: { arqs: Arq[]; query: URLSearchParams }): VNode {
  return html`<section aria-labelledby="states-h">
    <h2 id="states-h">By state <span class="count">${arqs.length} in all</span></h2>
    <ul class="states" data-testid="by-state">
      ${countByState(arqs).map(([state, n]) => {
        const mark = stateMark(state)
        return html`<li key=${state} data-state=${state} class=${mark.tone && `tone-${mark.tone}`}>
          <a href=${hrefWith(query, { state, page: undefined })}
            ><span aria-hidden="true">${mark.icon} </span>${state}: <strong>${n}</strong></a
          >
        </li>`
      })}
    </ul>
  </section>`
}

function Choice(props: {
  id: string
  label: string
  any: string
  value: string | undefined
  options: readonly string[]
}): VNode {
  const change = (e: Event) =>
    setQuery({ [props.id]: (e.currentTarget as HTMLSelectElement).value, page: undefined })
  return html`<div class="field">
    <label for=${`f-${props.id}`}>${props.label}</label>
    <select id=${`f-${props.id}`} name=${props.id} value=${props.value ?? ''} onChange=${change}>
      <option value="">${props.any}</option>
      ${props.options.map((o) => html`<option key=${o} value=${o}>${o}</option>`)}
    </select>
  </div>`
}

function Filters({ arqs, filter }: { arqs: Arq[]; filter: ArqFilter }): VNode {
  // Typing rewrites the current history entry; a choice from a list adds one (Back undoes it).
  const type = (e: Event) =>
    setQuery({ instance: (e.currentTarget as HTMLInputElement).value, page: undefined }, true)
  const states = [...new Set([...ARQ_STATES, ...arqs.map((a) => a.state)])]
  return html`<form
    class="filters"
    role="search"
    aria-label="Filter requests"
    onSubmit=${(e: Event) => e.preventDefault()}
  >
    <${Choice} id="state" label="State" any="Any state" value=${filter.state} options=${states} />
    <${Choice}
      id="project"
      label="Project"
      any="Any project"
      value=${filter.project}
      options=${valuesOf(arqs, 'project_id')}
    />
    <div class="field">
      <label for="f-instance">Instance</label>
      <input
        id="f-instance"
        name="instance"
        type="search"
        placeholder="uuid or its start"
        value=${filter.instance ?? ''}
        onInput=${type}
      />
    </div>
    <${Choice}
      id="host"
      label="Host"
      any="Any host"
      value=${filter.host}
      options=${valuesOf(arqs, 'hostname')}
    />
    <a class="clear" href="/dashboard/requests">Clear filters</a>
  </form>`
}

function Pager({ page, pages, query }: { page: number; pages: number; query: URLSearchParams }) {
  if (pages <= 1) return ''
  const to = (n: number) => hrefWith(query, { page: n === 1 ? undefined : String(n) })
  return html`<nav class="pager" aria-label="Pages of requests">
    ${page > 1 ? html`<a href=${to(page - 1)} rel="prev">← Previous</a>` : ''}
    <span>Page ${page} of ${pages}</span>
    ${page < pages ? html`<a href=${to(page + 1)} rel="next">Next →</a>` : ''}
  </nav>`
}

function Empty(): VNode {
  return html`<section class="empty" aria-labelledby="empty-h">
    <h2 id="empty-h">No accelerator requests</h2>
    <p>
      Nova creates them when it boots a server whose flavor names a device profile
      (<code>accel:device_profile</code>); or create some with
      <code>openstack accelerator arq create PROFILE</code>. See docs/arqs.md.
    </p>
  </section>`
}

export function RequestsList({ arqs, route }: { arqs: Arq[]; route: Route }): VNode {
  if (arqs.length === 0) return Empty()
  const filter = filterOf(route.query)
  const shown = applyFilter(arqs, filter)
  const { rows, page, pages } = pageOf(shown, Number(route.query.get('page') ?? '1'))
  return html`<p class="note">
      An admin sees every project's requests; anyone else, only their own project's (the API scopes
      the list). Counts are of every request shown to you; the filters and pages apply here.
    </p>
    <${Counts} arqs=${arqs} query=${route.query} />
    <section aria-labelledby="list-h">
      <h2 id="list-h">
        Requests <span class="count" data-testid="shown">${shown.length} of ${arqs.length}</span>
      </h2>
      <${Filters} arqs=${arqs} filter=${filter} />
      <${ArqTable} arqs=${rows} />
      <${Pager} page=${page} pages=${pages} query=${route.query} />
    </section>`
}

function List({ route }: { route: Route }): VNode {
  const { loaded, reload } = useLoad(loadArqs, [])
  useArqEvents(reload)
  return html`<${Show}
    loaded=${loaded}
    what="the accelerator requests"
    draw=${(arqs: Arq[]) => html`<${RequestsList} arqs=${arqs} route=${route} />`}
  />`
}

function Requests({ route }: { route: Route }): VNode {
  const uuid = route.rest[0]
  return uuid === undefined ? html`<${List} route=${route} />` : html`<${ArqView} uuid=${uuid} />`
}

export const requestsPage: Page = { id: 'requests', title: 'Requests', draw: Requests }
