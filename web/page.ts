/** What a page of the dashboard is (web/pages.ts lists them). */
import type { VNode } from 'preact'
import type { Route } from './router.js'

export interface Page {
  id: string
  title: string
  /** Draws the page for `route` (its filters, its `rest`). */
  draw: (props: { route: Route }) => VNode
}
