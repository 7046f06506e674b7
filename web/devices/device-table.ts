/**
 * The Devices page's table: filters and sort in the URL (Back and reload restore them), rows read
 * a page at a time as the operator scrolls near the end or presses "Load more".
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { healthMark } from '../format.js'
import { Show } from '../load.js'
import { setQuery } from '../router.js'
import {
  HEALTHS,
  listQuery,
  SORT_KEYS,
  TYPES,
  usePagedDevices,
  type DeviceRow,
  type PagedDevices,
} from './device-list.js'

function Choice(props: { name: string; label: string; values: string[]; value: string }): VNode {
  const change = (e: Event) =>
    setQuery({ [props.name]: (e.currentTarget as HTMLSelectElement).value })
  return html`<div class="field">
    <label for=${`f-${props.name}`}>${props.label}</label>
    <select id=${`f-${props.name}`} name=${props.name} value=${props.value} onChange=${change}>
      <option value="">any</option>
      ${props.values.map((v) => html`<option key=${v} value=${v}>${v}</option>`)}
    </select>
  </div>`
}

function Filters({ query }: { query: URLSearchParams }): VNode {
  const submit = (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const text = (n: string) => (form.elements.namedItem(n) as HTMLInputElement).value.trim()
    setQuery({ hostname: text('hostname'), vendor: text('vendor') })
  }
  const any = ['type', 'health', 'hostname', 'vendor'].some((k) => query.has(k))
  return html`<form class="filters" onSubmit=${submit} aria-label="Filter devices">
    <${Choice} name="type" label="Type" values=${TYPES} value=${query.get('type') ?? ''} />
    <${Choice} name="health" label="Health" values=${HEALTHS} value=${query.get('health') ?? ''} />
    <div class="field">
      <label for="f-hostname">Host</label>
      <input
        id="f-hostname"
        name="hostname"
        key=${`h-${query.get('hostname') ?? ''}`}
        defaultValue=${query.get('hostname') ?? ''}
      />
    </div>
    <div class="field">
      <label for="f-vendor">Vendor (PCI id)</label>
      <input
        id="f-vendor"
        name="vendor"
        size="6"
        key=${`v-${query.get('vendor') ?? ''}`}
        defaultValue=${query.get('vendor') ?? ''}
      />
    </div>
    <button type="submit">Apply</button>
    ${
      any
        ? html`<button
            type="button"
            onClick=${() => setQuery({ type: '', health: '', hostname: '', vendor: '' })}
          >
            Clear filters
          </button>`
        : ''
    }
  </form>`
}

/** A column header; the API sorts by `key` when it is one of {@link SORT_KEYS}. */
function Head({ label, col, query }: { label: string; col: string; query: URLSearchParams }) {
  if (!(SORT_KEYS as readonly string[]).includes(col)) return html`<th scope="col">${label}</th>`
  const on = query.get('sort_key') === col
  const dir = on ? query.get('sort_dir') : undefined
  const next = on && dir === 'asc' ? 'desc' : 'asc'
  const sort = on ? (dir === 'desc' ? 'descending' : 'ascending') : 'none'
  return html`<th scope="col" aria-sort=${sort}>
    <button
      type="button"
      class="sort"
      data-sort=${col}
      onClick=${() => setQuery({ sort_key: col, sort_dir: next })}
      aria-label=${`${label}: sort ${next === 'asc' ? 'ascending' : 'descending'}`}
    >
      ${label}<span aria-hidden="true">${on ? (dir === 'desc' ? ' ▼' : ' ▲') : ' ↕'}</span>
    </button>
  </th>`
}

function Row({ d }: { d: DeviceRow }): VNode {
  const mark = healthMark(d.health ?? 'unknown')
  const bad = mark.tone !== 'ok'
  return html`<tr data-uuid=${d.uuid} data-health=${d.health} class=${bad ? 'row-bad' : ''}>
    <th scope="row">
      <a href=${`/dashboard/devices/${d.uuid}`}><code>${d.uuid}</code></a>
    </th>
    <td>${d.hostname}</td>
    <td>${d.type}</td>
    <td>${d.vendor} ${d.model}</td>
    <td class=${`health tone-${mark.tone}`}>
      <span aria-hidden="true">${mark.icon} </span>${mark.word}
    </td>
    <td class="reason">${d.health_reason ?? ''}</td>
    <td>${d.lifecycle ?? ''}</td>
    <td>${d.status ?? ''}</td>
  </tr>`
}

const COLUMNS: [string, string][] = [
  ['Device', 'uuid'],
  ['Host', 'hostname'],
  ['Type', 'type'],
  ['Vendor, model', 'vendor'],
  ['Health', 'health'],
  ['Health reason', 'health_reason'],
  ['Lifecycle', 'lifecycle'],
  ['Status', 'status'],
]

/** The end of the table: how many are shown, "Load more", or that the end is reached. */
function Tail({ paged }: { paged: PagedDevices }): VNode {
  const sentinel = useRef<HTMLParagraphElement>(null)
  const [near, setNear] = useState(false)
  useEffect(() => {
    const el = sentinel.current
    if (el === null || typeof IntersectionObserver === 'undefined') return
    const io = new IntersectionObserver(
      (entries) => setNear(entries.some((e) => e.isIntersecting)),
      {
        rootMargin: '400px',
      },
    )
    io.observe(el)
    return () => io.disconnect()
  }, [])
  // While the end stays in sight, each page read brings the next (until the list ends).
  useEffect(() => {
    if (near && !paged.loading && !paged.done && paged.moreError === undefined) paged.loadMore()
  }, [near, paged.loading, paged.done, paged.rows.length])
  const shown =
    `${paged.rows.length} shown` +
    (paged.done ? ' (end of the list)' : '') +
    (paged.loading ? ', loading more…' : '')
  return html`<div class="tail" ref=${sentinel} data-testid="devices-tail">
    <p role="status" data-testid="devices-shown">${shown}</p>
    ${paged.moreError ? html`<p role="alert" class="tone-bad">${paged.moreError}</p>` : ''}
    ${
      paged.done
        ? ''
        : html`<button type="button" onClick=${paged.loadMore} disabled=${paged.loading}>
            Load more
          </button>`
    }
  </div>`
}

function Table({ paged, query }: { paged: PagedDevices; query: URLSearchParams }): VNode {
  if (paged.rows.length === 0)
    return html`<p class="empty" data-testid="devices-none">
      No device matches${query.toString() === '' ? ' (no device reported yet)' : ' these filters'}.
    </p>`
  return html`<div class="scroll" tabindex="0" role="region" aria-label="Devices table">
      <table data-testid="devices-table">
        <thead>
          <tr>
            ${COLUMNS.map(([label, col]) => html`<${Head} key=${col} label=${label} col=${col} query=${query} />`)}
          </tr>
        </thead>
        <tbody>
          ${paged.rows.map((d) => html`<${Row} key=${d.uuid} d=${d} />`)}
        </tbody>
      </table>
    </div>
    <${Tail} paged=${paged} />`
}

export function DeviceTable({ query: raw }: { query: URLSearchParams }): VNode {
  const query = listQuery(raw)
  const paged = usePagedDevices(query)
  return html`<${Filters} query=${query} />
    <${Show}
      loaded=${paged.first}
      what="the devices"
      draw=${() => html`<${Table} paged=${paged} query=${query} />`}
    />`
}
