/**
 * The Events page's filters: each lives in the URL's query (so reload, Back and a bookmark keep
 * it), and each change pushes a history entry, so Back undoes it.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import type { LiveFilter } from '../live.js'
import { FILTER_KEYS, PRIORITIES, RESOURCE_TYPES } from './events-data.js'

export type FilterPatch = Record<string, string | undefined>

/** Common type prefixes offered while typing. */
const PREFIXES = [
  'accelerator.device.',
  'accelerator.device.health_changed',
  'accelerator.deployable.',
  'accelerator.arq.',
  'accelerator.driver.',
  'accelerator.agent.',
]

export function EventFilters({
  filter,
  onChange,
}: {
  filter: LiveFilter
  onChange: (patch: FilterPatch) => void
}): VNode {
  const set = (name: string) => (e: Event) =>
    onChange({ [name]: (e.currentTarget as HTMLInputElement | HTMLSelectElement).value.trim() })
  const submit = (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const patch: FilterPatch = {}
    for (const k of FILTER_KEYS)
      patch[k] = (form.elements.namedItem(k) as HTMLInputElement | null)?.value.trim()
    onChange(patch)
  }
  const clear = () => onChange(Object.fromEntries(FILTER_KEYS.map((k) => [k, undefined])))
  return html`<form class="filters" aria-label="Event filters" onSubmit=${submit}>
    <label
      >Resource type
      <select
        name="resource_type"
        value=${filter.resource_type ?? ''}
        onChange=${set('resource_type')}
      >
        <option value="">any</option>
        ${RESOURCE_TYPES.map((t) => html`<option key=${t} value=${t}>${t}</option>`)}
      </select>
    </label>
    <label
      >Event type or prefix
      <input
        name="event_type"
        list="event-prefixes"
        placeholder="accelerator.device."
        value=${filter.event_type ?? ''}
        onChange=${set('event_type')}
      />
    </label>
    <datalist id="event-prefixes">
      ${PREFIXES.map((p) => html`<option key=${p} value=${p} />`)}
    </datalist>
    <label
      >Priority
      <select name="priority" value=${filter.priority ?? ''} onChange=${set('priority')}>
        <option value="">any</option>
        ${PRIORITIES.map((p) => html`<option key=${p} value=${p}>${p}</option>`)}
      </select>
    </label>
    <label
      >Resource uuid
      <input
        name="resource_uuid"
        placeholder="a device's uuid, a host"
        value=${filter.resource_uuid ?? ''}
        onChange=${set('resource_uuid')}
      />
    </label>
    <button type="submit">Apply</button>
    <button type="button" onClick=${clear}>Clear filters</button>
  </form>`
}
