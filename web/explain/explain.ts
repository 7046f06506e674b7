/** The Explain page (issue 32): not built yet. */
import { html } from 'htm/preact'
import type { Page } from '../page.js'

export const explainPage: Page = {
  id: 'explain',
  title: 'Explain',
  draw: () => html`<p>Not built yet.</p>`,
}
