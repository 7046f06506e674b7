/** Live updates of the Requests page: events about accelerator requests (web/live.ts). */
import { useEffect } from 'preact/hooks'
import { subscribeEvents } from '../live.js'

/** A burst of events (a server's boot binds many requests at once) makes one read. */
const COALESCE_MS = 500

/**
 * Reads again, quietly (the old rows stay until the new come), after events about accelerator
 * requests: any request's, or only `uuid`'s.
 */
export function useArqEvents(reload: (quiet?: boolean) => void, uuid?: string): void {
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const stop = subscribeEvents((e) => {
      if (e.resource_type !== 'arq' || (uuid !== undefined && e.resource_uuid !== uuid)) return
      timer ??= setTimeout(() => {
        timer = undefined
        reload(true)
      }, COALESCE_MS)
    })
    return () => {
      stop()
      clearTimeout(timer)
    }
  }, [uuid])
}
