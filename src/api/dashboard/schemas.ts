/** What the dashboard's routes tell the OpenAPI documents (src/api/schemas/common.ts's RouteDoc). */
import { Type } from '@sinclair/typebox'
import { errors, type RouteDoc } from '../schemas/common.js'

const html = (description: string) =>
  Type.Unsafe({ description, content: { 'text/html': { schema: Type.String() } } })

export const shellDoc: RouteDoc = {
  summary: 'The operators’ dashboard (docs/dashboard.md): its HTML shell',
  tags: ['dashboard'],
  security: [],
  response: { 200: html('The page; its script reads the API with the caller’s token') },
}

export const pageDoc: RouteDoc = {
  summary: 'A page of the dashboard (fleet, devices, requests, explain, events), at its own URL',
  tags: ['dashboard'],
  security: [],
  params: Type.Object({
    page: Type.String({ description: 'fleet, devices, requests, explain or events' }),
  }),
  response: { 200: html('The same shell: the script draws the page'), ...errors(404) },
}

export const itemDoc: RouteDoc = {
  summary: 'An item of a dashboard page (a device, a request), at its own URL',
  tags: ['dashboard'],
  security: [],
  params: Type.Object({
    page: Type.String({ description: 'fleet, devices, requests, explain or events' }),
    item: Type.String({ description: 'the item: a device’s or a request’s uuid' }),
  }),
  response: { 200: html('The same shell: the script draws the item'), ...errors(404) },
}

export const assetDoc: RouteDoc = {
  summary: 'A static asset of the dashboard, built by `npm run build` into dist/web/',
  tags: ['dashboard'],
  security: [],
  params: Type.Object({ file: Type.String({ description: 'app.js or app.css' }) }),
  response: {
    200: Type.Unsafe({
      description: 'The asset, gzip-compressed when the client accepts it',
      content: {
        'text/javascript': { schema: Type.String() },
        'text/css': { schema: Type.String() },
      },
    }),
    ...errors(404, 503),
  },
}
