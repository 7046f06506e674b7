/**
 * The dashboard's entry (issue 32, docs/dashboard.md): one page for now, Fleet, at its own URL
 * (`/dashboard/fleet`); a Keystone token, when the API asks for one, kept in memory only.
 */
import { render, type VNode } from 'preact'
import { html } from 'htm/preact'
import { useCallback, useEffect, useState } from 'preact/hooks'
import { ApiCallError, hasToken, setToken } from './api.js'
import { loadFleet, type Fleet } from './fleet-data.js'
import { FleetPage } from './fleet.js'

type Loaded = { fleet: Fleet } | { error: ApiCallError | Error } | undefined

function TokenForm({ onToken }: { onToken: () => void }): VNode {
  const submit = (e: Event) => {
    e.preventDefault()
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem(
      'token',
    ) as HTMLInputElement
    setToken(input.value)
    input.value = ''
    onToken()
  }
  return html`<form class="token" onSubmit=${submit}>
    <label for="token">Keystone token</label>
    <input id="token" name="token" type="password" autocomplete="off" required />
    <button type="submit">Use token</button>
    <p class="hint">Kept in this page's memory only, sent as X-Auth-Token, never shown.</p>
  </form>`
}

function App(): VNode {
  const [loaded, setLoaded] = useState<Loaded>(undefined)
  const load = useCallback(() => {
    setLoaded(undefined)
    loadFleet().then(
      (fleet) => setLoaded({ fleet }),
      (error: Error) => setLoaded({ error }),
    )
  }, [])
  useEffect(() => {
    if (location.pathname.replace(/\/$/, '') === '/dashboard')
      history.replaceState(null, '', '/dashboard/fleet')
    load()
  }, [load])
  const needsToken =
    loaded &&
    'error' in loaded &&
    loaded.error instanceof ApiCallError &&
    loaded.error.status === 401
  return html`<a class="skip" href="#main">Skip to content</a>
    <header>
      <nav aria-label="Dashboard">
        <strong>Cyborg</strong>
        <a href="/dashboard/fleet" aria-current="page">Fleet</a>
      </nav>
      <button type="button" onClick=${load}>Refresh</button>
    </header>
    <main id="main" tabindex="-1">
      <h1>Fleet</h1>
      ${needsToken || hasToken() ? html`<${TokenForm} onToken=${load} />` : ''}
      ${
        loaded === undefined
          ? html`<p role="status">Loading…</p>`
          : 'error' in loaded
            ? html`<p role="alert" class="tone-bad">
                Could not read the fleet: ${loaded.error.message}
              </p>`
            : html`<${FleetPage} fleet=${loaded.fleet} />`
      }
    </main>`
}

render(html`<${App} />`, document.getElementById('app')!)
