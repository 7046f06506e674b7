/**
 * The devices list's data: its filters and sort as they live in the URL, and its pages, read from
 * `GET /v2/devices` with `limit` and `marker` one page at a time (never the whole fleet at once).
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { getJson } from '../api.js'
import { useLoad, type Loaded } from '../load.js'

/** A device as `GET /v2/devices` shows it at 2.5. */
export interface DeviceRow {
  uuid: string
  type: string
  vendor: string
  model: string
  hostname: string
  status?: string
  lifecycle?: string
  lifecycle_reason?: string | null
  health?: string
  health_reason?: string | null
}

/** Rows a page, unless the URL's `limit` (1 to 1000) says otherwise. */
export const PAGE_SIZE = 100
/** The microversion of the list: 2.5 filters by health and shows it. */
const LIST_MINOR = 5

/** The filters the API takes, as the URL query names them (the API's own names). */
export const FILTERS = ['type', 'vendor', 'hostname', 'health'] as const
/** Columns the API sorts by that the table shows. */
export const SORT_KEYS = ['hostname', 'type', 'vendor', 'model', 'status', 'uuid'] as const

export const TYPES = ['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD', 'PCI', 'REMOTE']
export const HEALTHS = ['ok', 'degraded', 'failed', 'unknown']

/** The list's query (filters, sort, page size) from the URL; unknown values are dropped. */
export function listQuery(query: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams()
  for (const f of FILTERS) {
    const v = query.get(f)?.trim()
    if (v) out.set(f, v)
  }
  const limit = Number(query.get('limit'))
  if (Number.isInteger(limit) && limit >= 1 && limit <= 1000) out.set('limit', String(limit))
  const key = query.get('sort_key')
  if (key && (SORT_KEYS as readonly string[]).includes(key)) {
    out.set('sort_key', key)
    out.set('sort_dir', query.get('sort_dir') === 'desc' ? 'desc' : 'asc')
  }
  return out
}

const pageSize = (query: URLSearchParams) => Number(query.get('limit') ?? PAGE_SIZE)

function pagePath(query: URLSearchParams, marker: string | undefined): string {
  const q = new URLSearchParams(query)
  q.set('limit', String(pageSize(query)))
  if (marker !== undefined) q.set('marker', marker)
  return `/v2/devices?${q.toString()}`
}

interface Page {
  rows: DeviceRow[]
  done: boolean
}

async function readPage(query: URLSearchParams, marker?: string): Promise<Page> {
  const { devices } = await getJson<{ devices: DeviceRow[] }>(pagePath(query, marker), LIST_MINOR)
  return { rows: devices, done: devices.length < pageSize(query) }
}

export interface PagedDevices {
  /** The first page's read (Loading…, its error). */
  first: Loaded<Page>
  rows: DeviceRow[]
  done: boolean
  loading: boolean
  /** The error of the last "more" read, if it failed. */
  moreError: string | undefined
  loadMore: () => void
}

/**
 * The pages of the list for `query` (a {@link listQuery}): the first is read at once (again at
 * Refresh), each next one when `loadMore` is called, after the last row read so far.
 */
export function usePagedDevices(query: URLSearchParams): PagedDevices {
  const key = query.toString()
  const { loaded } = useLoad(() => readPage(query), [key])
  const [more, setMore] = useState<{ rows: DeviceRow[]; done: boolean; error?: string }>({
    rows: [],
    done: false,
  })
  const [loading, setLoading] = useState(false)
  // The read in flight belongs to this generation; a new filter or Refresh starts another.
  const generation = useRef(0)
  useEffect(() => {
    generation.current++
    setMore({ rows: [], done: false })
    setLoading(false)
  }, [loaded])
  const firstRows = loaded !== undefined && 'value' in loaded ? loaded.value.rows : []
  const rows = more.rows.length === 0 ? firstRows : firstRows.concat(more.rows)
  const done =
    loaded !== undefined && 'value' in loaded && (loaded.value.done || more.done) ? true : false
  const loadMore = () => {
    if (loading || done || rows.length === 0) return
    const gen = generation.current
    setLoading(true)
    setMore((m) => ({ rows: m.rows, done: m.done }))
    readPage(query, rows[rows.length - 1]!.uuid).then(
      (page) => {
        if (gen !== generation.current) return
        setMore((m) => ({ rows: m.rows.concat(page.rows), done: page.done }))
        setLoading(false)
      },
      (error: Error) => {
        if (gen !== generation.current) return
        setMore((m) => ({ ...m, error: error.message }))
        setLoading(false)
      },
    )
  }
  return { first: loaded, rows, done, loading, moreError: more.error, loadMore }
}
