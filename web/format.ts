/** Times for people: local time shown, the UTC value in the title. */

/** `{ text, title }` for an API timestamp (UTC, with or without its `Z`). */
export function localTime(value: string): { text: string; title: string } {
  if (value === '') return { text: 'never', title: 'no report yet' }
  const at = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`)
  if (Number.isNaN(at.getTime())) return { text: value, title: value }
  return { text: at.toLocaleString(), title: `${at.toISOString()} (UTC)` }
}

/** The mark and word for a health value: colour is never the only signal. */
export function healthMark(health: string): { icon: string; word: string; tone: string } {
  if (health === 'ok') return { icon: '✓', word: 'ok', tone: 'ok' }
  if (health === 'failed') return { icon: '✕', word: 'failed', tone: 'bad' }
  return { icon: '?', word: health, tone: 'warn' }
}
