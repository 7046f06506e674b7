/**
 * Parsed JSON columns, shared between reads.
 *
 * Some columns hold small JSON documents (a device's control path, a profile's groups) that the
 * API's hottest reads parse on every call, where parsing was a visible share of the work: a
 * hundred profiles cost more to parse than to select. The same text always parses to the same
 * value, so the value is kept by text, deeply frozen so that callers sharing it cannot change it
 * for one another. The memo is bounded: it starts over when full.
 */

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}

/** Returns `JSON.parse` with a memo of at most `max` texts; the values are deeply frozen. */
export function jsonMemo<T>(max = 4096): (text: string) => T {
  const parsed = new Map<string, T>()
  return (text) => {
    let value = parsed.get(text)
    if (value === undefined) {
      value = deepFreeze(JSON.parse(text) as T)
      if (parsed.size >= max) parsed.clear()
      parsed.set(text, value)
    }
    return value
  }
}
