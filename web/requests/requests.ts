/** The Requests page (issue 32): not built yet. */
import { html } from 'htm/preact'
import type { Page } from '../page.js'

export const requestsPage: Page = {
  id: 'requests',
  title: 'Requests',
  draw: () => html`<p>Not built yet.</p>`,
}
