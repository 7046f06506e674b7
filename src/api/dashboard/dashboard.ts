/**
 * The operators' dashboard (issue 32, docs/dashboard.md): `GET /dashboard` and `GET
 * /dashboard/:page` answer the page's HTML shell, `GET /dashboard/assets/:file` the script and
 * style sheet that `npm run build` put in dist/web/ (web/ is their source). The page reads the
 * API from the browser with the caller's own token, so these routes are public and hold no data.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { NotFoundError, UnavailableError } from '../../domain/errors.js'
import { assetDoc, itemDoc, pageDoc, shellDoc } from './schemas.js'

/** The pages the shell answers for (web/pages.ts draws them). */
export const DASHBOARD_PAGES = ['fleet', 'devices', 'requests', 'explain', 'events'] as const

const TYPES: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
}

/** dist/web/ of this checkout: the first folder up from this module that holds package.json. */
export function findAssetDir(from = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      readFileSync(path.join(dir, 'package.json'))
      return path.join(dir, 'dist', 'web')
    } catch {
      if (path.dirname(dir) === dir) return path.join(from, 'dist', 'web')
    }
  }
}

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cyborg dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/app.css">
<script type="module" src="/dashboard/assets/app.js"></script>
</head>
<body>
<div id="app"><main><h1>Cyborg dashboard</h1><p>Loading… (the dashboard needs JavaScript)</p></main></div>
</body>
</html>
`

/** Registers the dashboard's routes; `assetDir` defaults to {@link findAssetDir}. */
export function dashboardRoutes(app: FastifyInstance, assetDir = findAssetDir()): void {
  const cache = new Map<string, Buffer | null>()
  const read = (name: string): Buffer | null => {
    if (!cache.has(name)) {
      try {
        cache.set(name, readFileSync(path.join(assetDir, name)))
      } catch {
        cache.set(name, null)
      }
    }
    return cache.get(name)!
  }
  const shell = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(SHELL)
  app.get('/dashboard', { config: { doc: shellDoc } }, shell)
  const page = async (
    request: FastifyRequest<{ Params: { page: string } }>,
    reply: FastifyReply,
  ) => {
    if (!(DASHBOARD_PAGES as readonly string[]).includes(request.params.page))
      throw new NotFoundError(
        `no dashboard page '${request.params.page}': pages are ${DASHBOARD_PAGES.join(', ')}`,
      )
    return shell(request, reply)
  }
  app.get('/dashboard/:page', { config: { doc: pageDoc } }, page)
  // A page's own items (`/dashboard/devices/<uuid>`): the same shell, the script reads the rest.
  app.get('/dashboard/:page/:item', { config: { doc: itemDoc } }, page)
  app.get<{ Params: { file: string } }>(
    '/dashboard/assets/:file',
    { config: { doc: assetDoc } },
    async (request, reply) => {
      const name = request.params.file
      const type = TYPES[name]
      if (type === undefined)
        throw new NotFoundError(
          `no dashboard asset '${name}': assets are ${Object.keys(TYPES).join(', ')}`,
        )
      const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))
      const zipped = gzip ? read(`${name}.gz`) : null
      const body = zipped ?? read(name)
      if (body === null)
        throw new UnavailableError(`dashboard asset '${name}' is not built: run \`npm run build\``)
      if (zipped !== null) reply.header('content-encoding', 'gzip')
      return reply.type(type).header('vary', 'Accept-Encoding').send(body)
    },
  )
}
