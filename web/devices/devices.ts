/** The Devices page (issue 32): not built yet. */
import { html } from 'htm/preact'
import type { Page } from '../page.js'

export const devicesPage: Page = {
  id: 'devices',
  title: 'Devices',
  draw: () => html`<p>Not built yet.</p>`,
}
