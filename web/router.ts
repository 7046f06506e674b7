/**
 * The dashboard's URLs: every page and filter has its own (`/dashboard/<page>[/<id>][?filters]`),
 * so the back button, a reload and a bookmark all land where the operator was. Links inside the
 * dashboard move through `history.pushState` instead of loading the page again.
 */
import { useEffect, useState } from 'preact/hooks'

export interface Route {
  /** The page's id: the path's first part after `/dashboard/` (`fleet` when there is none). */
  page: string
  /** The parts after the page's id, decoded (a device's uuid on `/dashboard/devices/<uuid>`). */
  rest: string[]
  /** The filters, from the query string. */
  query: URLSearchParams
}

const listeners = new Set<() => void>()

/** The route of the browser's current URL. */
export function currentRoute(): Route {
  const parts = location.pathname
    .replace(/^\/dashboard\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent)
  return {
    page: parts[0] ?? 'fleet',
    rest: parts.slice(1),
    query: new URLSearchParams(location.search),
  }
}

function changed(): void {
  for (const listener of listeners) listener()
}

/** Goes to `href` (a `/dashboard/…` URL); `replace` rewrites the current history entry instead. */
export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href)
  else history.pushState(null, '', href)
  changed()
}

/**
 * Sets or clears (`undefined` or '') filters in the URL's query string. Typing in a filter field
 * replaces the history entry; choosing from a list pushes one, so Back undoes it.
 */
export function setQuery(patch: Record<string, string | undefined>, replace = false): void {
  const query = new URLSearchParams(location.search)
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || v === '') query.delete(k)
    else query.set(k, v)
  }
  const search = query.toString()
  navigate(`${location.pathname}${search === '' ? '' : `?${search}`}`, replace)
}

/** The route, drawn again at every navigation (a link, Back, Forward, {@link setQuery}). */
export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute)
  useEffect(() => {
    const update = () => setRoute(currentRoute())
    listeners.add(update)
    addEventListener('popstate', update)
    return () => {
      listeners.delete(update)
      removeEventListener('popstate', update)
    }
  }, [])
  return route
}

/** Turns a plain click on a `/dashboard/…` link into {@link navigate} (installed once). */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
      return
    const a = (e.target as Element).closest('a')
    const href = a?.getAttribute('href')
    if (!a || !href?.startsWith('/dashboard') || a.target !== '') return
    e.preventDefault()
    navigate(href)
    document.getElementById('main')?.focus()
  })
}
