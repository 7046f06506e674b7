/**
 * Loading what a page shows: a hook that reads (again at Refresh and whenever its keys change), and
 * the frame around the result: "Loading…", the API's refusal in words, and the login form
 * (web/login-form.ts) when the API asks for a token.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiCallError, onTokenChange } from './api.js'
import { LoginForm } from './login-form.js'

export type Loaded<T> = { value: T } | { error: ApiCallError | Error } | undefined

const refreshers = new Set<() => void>()

/** Reads every page's data again (the header's Refresh, a new token). */
export function refreshAll(): void {
  for (const r of refreshers) r()
}

// A login, a pasted token or a logout: every page reads again with (or without) it.
onTokenChange(refreshAll)

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

/** The Show that draws the login form when several answered 401: the first one drawn. */
let loginOwner: object | undefined

/** Whether this Show draws the login form: it `wants` one, and no other Show draws it already. */
function useLoginSlot(wants: boolean): boolean {
  const me = useRef({}).current
  useEffect(
    () => () => {
      if (loginOwner === me) loginOwner = undefined
    },
    [],
  )
  if (!wants) {
    if (loginOwner === me) loginOwner = undefined
    return false
  }
  loginOwner ??= me
  return loginOwner === me
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
  const e = loaded !== undefined && 'error' in loaded ? loaded.error : undefined
  const login = useLoginSlot(e instanceof ApiCallError && e.status === 401)
  if (loaded === undefined) return html`<p role="status">Loading…</p>`
  if ('value' in loaded) return draw(loaded.value)
  return html`${login ? html`<${LoginForm} />` : ''}
    <p role="alert" class="tone-bad">Could not read ${what}: ${loaded.error.message}</p>`
}
