/**
 * The header's "who is looking": the user and project of the token in use (never the token) and
 * a Log out button that forgets it; under noauth, a note that no login is needed.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { hasToken } from './api.js'
import { logOut, useSession } from './session.js'
import './session.css'

export function SessionBadge(): VNode {
  const session = useSession()
  if (!hasToken()) {
    return session?.auth_strategy === 'noauth'
      ? html`<p class="who" data-testid="who">No login (noauth: every caller is an admin)</p>`
      : html``
  }
  const user = session?.user.name ?? session?.user.id
  const project = session?.project.name ?? session?.project.id
  return html`<div class="who">
    <p data-testid="who">
      ${
        user === undefined || user === null
          ? 'Logged in'
          : html`Logged in as <strong>${user}</strong>`
      }
      ${project ? html` · project <strong>${project}</strong>` : ''}
    </p>
    <button type="button" onClick=${logOut}>Log out</button>
  </div>`
}
