/**
 * Loading what a page shows: a hook that reads (again at Refresh and whenever its keys change), and
 * the frame around the result: "Loading…", the API's refusal in words, and the token form when
 * the API asks for a token.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { ApiCallError, hasToken, setToken } from './api.js'

export type Loaded<T> = { value: T } | { error: ApiCallError | Error } | undefined

const refreshers = new Set<() => void>()

/** Reads every page's data again (the header's Refresh, a new token). */
export function refreshAll(): void {
  for (const r of refreshers) r()
}

/**
 * Calls `read` now, whenever one of `keys` changes, at {@link refreshAll}, and at `reload()`.
 * `quiet` reloads (live updates) keep showing the old value until the new one comes.
 */
export function useLoad<T>(
  read: () => Promise<T>,
  keys: unknown[],
): { loaded: Loaded<T>; reload: (quiet?: boolean) => void } {
  const [loaded, setLoaded] = useState<Loaded<T>>(undefined)
  const [tick, setTick] = useState({ n: 0, quiet: false })
  useEffect(() => {
    const r = () => setTick((t) => ({ n: t.n + 1, quiet: false }))
    refreshers.add(r)
    return () => void refreshers.delete(r)
  }, [])
  useEffect(() => {
    let live = true
    if (!tick.quiet) setLoaded(undefined)
    read().then(
      (value) => live && setLoaded({ value }),
      (error: Error) => live && setLoaded({ error }),
    )
    return () => {
      live = false
    }
  }, [tick, ...keys])
  return { loaded, reload: (quiet = false) => setTick((t) => ({ n: t.n + 1, quiet })) }
}

function TokenForm(): VNode {
  const submit = (e: Event) => {
    e.preventDefault()
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem(
      'token',
    ) as HTMLInputElement
    setToken(input.value)
    input.value = ''
    refreshAll()
  }
  return html`<form class="token" onSubmit=${submit}>
    <label for="token">Keystone token</label>
    <input id="token" name="token" type="password" autocomplete="off" required />
    <button type="submit">Use token</button>
    <p class="hint">Kept in this page's memory only, sent as X-Auth-Token, never shown.</p>
  </form>`
}

/** Draws `loaded`: Loading…, the error (with the token form on a 401), or `draw(value)`. */
export function Show<T>({
  loaded,
  what,
  draw,
}: {
  loaded: Loaded<T>
  what: string
  draw: (value: T) => VNode
}): VNode {
  if (loaded === undefined) return html`<p role="status">Loading…</p>`
  if ('value' in loaded) return draw(loaded.value)
  const e = loaded.error
  const needsToken = e instanceof ApiCallError && e.status === 401
  return html`${needsToken || hasToken() ? html`<${TokenForm} />` : ''}
    <p role="alert" class="tone-bad">Could not read ${what}: ${e.message}</p>`
}
