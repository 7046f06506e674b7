/**
 * The Devices page (issue 32): `/dashboard/devices[?type&vendor&hostname&health&sort_key&sort_dir]`
 * is the table of devices (device-table.ts); `/dashboard/devices/<uuid>` one device (device-page.ts).
 */
import { html } from 'htm/preact'
import type { Page } from '../page.js'
import { DevicePage } from './device-page.js'
import { DeviceTable } from './device-table.js'
import './devices.css'

export const devicesPage: Page = {
  id: 'devices',
  title: 'Devices',
  draw: ({ route }) =>
    route.rest[0] === undefined
      ? html`<${DeviceTable} query=${route.query} />`
      : html`<${DevicePage} key=${route.rest[0]} uuid=${route.rest[0]} />`,
}
