/**
 * A reader of `text/event-stream` (the server-sent events format, as the WHATWG spec parses it):
 * fed text as it arrives, in chunks cut anywhere, it calls back once per complete message. Used by
 * web/live.ts, which reads the stream with `fetch` because EventSource cannot send X-Auth-Token.
 */

export interface SseMessage {
  /** The `id:` field (the last one given, as the spec's last event id). */
  id: string
  /** The `event:` field; `message` when none. */
  event: string
  /** The `data:` lines, joined with newlines. */
  data: string
}

/**
 * Returns the feed: call it with each decoded chunk. `onRetry` gets a `retry:` in ms; `onId` every
 * `id:`, message or not (a stream may name its position before any message, for a resume).
 */
export function sseReader(
  onMessage: (m: SseMessage) => void,
  onRetry: (ms: number) => void = () => {},
  onId: (id: string) => void = () => {},
): (chunk: string) => void {
  let rest = ''
  let lastId = ''
  let event = ''
  let data: string[] = []
  const line = (l: string) => {
    if (l === '') {
      if (data.length > 0)
        onMessage({ id: lastId, event: event || 'message', data: data.join('\n') })
      event = ''
      data = []
      return
    }
    if (l.startsWith(':')) return
    const colon = l.indexOf(':')
    const field = colon < 0 ? l : l.slice(0, colon)
    let value = colon < 0 ? '' : l.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') data.push(value)
    else if (field === 'event') event = value
    else if (field === 'id' && !value.includes('\0')) {
      lastId = value
      onId(value)
    } else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value))
  }
  return (chunk) => {
    rest += chunk
    // A lone \r at the end may be the first half of \r\n: keep it for the next chunk.
    const parts = rest.split(/\r\n|\r(?!$)|\n/)
    rest = parts.pop()!
    for (const l of parts) line(l)
  }
}
