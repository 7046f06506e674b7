/** The dashboard's pages, in the order of its navigation; each is drawn at `/dashboard/<id>`. */
import type { Page } from './page.js'
import { fleetPage } from './fleet/fleet.js'
import { devicesPage } from './devices/devices.js'
import { requestsPage } from './requests/requests.js'
import { explainPage } from './explain/explain.js'
import { eventsPage } from './events/events.js'

export const PAGES: Page[] = [fleetPage, devicesPage, requestsPage, explainPage, eventsPage]
