/**
 * The dashboard's entry (issue 32, docs/dashboard.md): the frame (navigation, Refresh) around the
 * page of the URL; `/dashboard` itself goes to the Fleet page.
 */
import './style.css'
import { render, type VNode } from 'preact'
import { html } from 'htm/preact'
import { useEffect } from 'preact/hooks'
import { refreshAll } from './load.js'
import { PAGES } from './pages.js'
import { interceptLinks, navigate, useRoute } from './router.js'
import { SessionBadge } from './session-badge.js'

function App(): VNode {
  const route = useRoute()
  useEffect(() => {
    if (location.pathname.replace(/\/$/, '') === '/dashboard') navigate('/dashboard/fleet', true)
  }, [])
  const page = PAGES.find((p) => p.id === route.page)
  useEffect(() => {
    document.title = `${page?.title ?? 'Not found'} · Cyborg dashboard`
  }, [page])
  return html`<a class="skip" href="#main">Skip to content</a>
    <header>
      <nav aria-label="Dashboard">
        <strong>Cyborg</strong>
        ${PAGES.map(
          (p) =>
            html`<a
              key=${p.id}
              href=${`/dashboard/${p.id}`}
              aria-current=${p.id === route.page ? 'page' : undefined}
              >${p.title}</a
            >`,
        )}
      </nav>
      <${SessionBadge} />
      <button type="button" onClick=${refreshAll}>Refresh</button>
    </header>
    <main id="main" tabindex="-1">
      <h1>${page?.title ?? 'Not found'}</h1>
      ${
        page
          ? html`<${page.draw} route=${route} />`
          : html`<p role="alert">No page '${route.page}' here.</p>`
      }
    </main>`
}

const root = document.getElementById('app')!
interceptLinks(root)
render(html`<${App} />`, root)
