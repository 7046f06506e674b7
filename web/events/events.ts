/** The Events page (issue 32): not built yet. */
import { html } from 'htm/preact'
import type { Page } from '../page.js'

export const eventsPage: Page = {
  id: 'events',
  title: 'Events',
  draw: () => html`<p>Not built yet.</p>`,
}
