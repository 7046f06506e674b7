/**
 * A small read-through cache for fleet-wide reads (e.g. capacity's and explain's candidates):
 * `get(key)` answers from a value loaded at most `ttlMs` ago, else loads it. Callers that ask for
 * the same key while its load is under way share that one load (one query for N concurrent
 * requests). A load that fails is not kept: its callers get the error, the next call loads again.
 * `ttlMs` 0 (or less) caches nothing: every call loads. The age of a value counts from the start
 * of its load, so no answer is older than `ttlMs` plus one load. At most `maxEntries` keys are
 * held (the oldest loaded goes first). Every caller of a key gets the same value: treat it as
 * read-only. Not wired into any route by itself.
 */

export interface ReadThroughOptions<K, V> {
  /** How long a loaded value is served, in ms, from the start of its load; 0: no caching. */
  ttlMs: number
  /** Reads the value of `key` (e.g. from the database). */
  load: (key: K) => Promise<V>
  /** How many keys are held at most. @default 64 */
  maxEntries?: number
  /** The clock, in ms. @default performance.now */
  now?: () => number
}

export interface ReadThroughCache<K, V> {
  /** The value of `key`: cached when fresh, shared when its load is under way, else loaded. */
  get(key: K): Promise<V>
  /** Forgets every value (loads under way still answer their callers). */
  clear(): void
  /** How many keys are held (fresh, stale or loading). */
  readonly size: number
}

interface Entry<V> {
  value: Promise<V>
  /** When the value stops being served; Infinity while its load is under way. */
  expiresAt: number
}

export function readThroughCache<K, V>({
  ttlMs,
  load,
  maxEntries = 64,
  now = () => performance.now(),
}: ReadThroughOptions<K, V>): ReadThroughCache<K, V> {
  const entries = new Map<K, Entry<V>>()

  function start(key: K): Promise<V> {
    const startedAt = now()
    // The callbacks run after `entry` is set: a promise's callbacks never run synchronously.
    const value = (async () => load(key))().then(
      (v) => {
        entry.expiresAt = startedAt + ttlMs
        return v
      },
      (err: unknown) => {
        if (entries.get(key) === entry) entries.delete(key)
        throw err
      },
    )
    const entry: Entry<V> = { value, expiresAt: Infinity }
    putNewest(entries, key, entry, maxEntries)
    return entry.value
  }

  return {
    get(key: K): Promise<V> {
      if (!(ttlMs > 0)) return (async () => load(key))()
      const entry = entries.get(key)
      if (entry !== undefined && now() < entry.expiresAt) return entry.value
      return start(key)
    },
    clear() {
      entries.clear()
    },
    get size() {
      return entries.size
    },
  }
}

export interface MarkedCacheOptions<K, V> {
  /**
   * A text that changes whenever the data may have (src/db/reads/snapshot-marker.ts); undefined: no
   * marker, nothing is kept and every call loads.
   */
  marker: () => Promise<string | undefined>
  /** Reads the value of `key`. */
  load: (key: K) => Promise<V>
  /** How many keys are held at most. @default 64 */
  maxEntries?: number
}

/**
 * A cache that is never stale (issue 28): `get(key)` asks the marker first and answers from the
 * value loaded under that same marker, else loads. A value is kept only when the marker read just
 * before its load equals the one read just after it (nothing changed while it loaded, so the value
 * is what that marker stands for); a load that saw a change is answered but not kept. Callers that
 * miss under the same marker while a load is under way share it. Values are shared: read-only.
 */
export function markedCache<K, V>({
  marker,
  load,
  maxEntries = 64,
}: MarkedCacheOptions<K, V>): ReadThroughCache<K, V> {
  const entries = new Map<K, { marker: string; value: Promise<V> }>()
  // Forgets `entry` unless a newer one took its key meanwhile.
  const forget = (key: K, entry: object) => {
    if (entries.get(key) === entry) entries.delete(key)
  }

  function start(key: K, before: string): Promise<V> {
    const entry = { marker: before, value: undefined as unknown as Promise<V> }
    entry.value = (async () => {
      try {
        const value = await load(key)
        if ((await marker()) !== before) forget(key, entry)
        return value
      } catch (err) {
        forget(key, entry)
        throw err
      }
    })()
    putNewest(entries, key, entry, maxEntries)
    return entry.value
  }

  return {
    async get(key: K): Promise<V> {
      const now = await marker()
      if (now === undefined) return load(key)
      const entry = entries.get(key)
      if (entry !== undefined && entry.marker === now) return entry.value
      return start(key, now)
    },
    clear() {
      entries.clear()
    },
    get size() {
      return entries.size
    },
  }
}

/** Puts `entry` under `key` as the newest, first dropping the oldest while the map is full (a Map keeps insertion order). */
function putNewest<K, E>(entries: Map<K, E>, key: K, entry: E, maxEntries: number): void {
  entries.delete(key)
  while (entries.size >= Math.max(1, maxEntries)) {
    entries.delete(entries.keys().next().value as K)
  }
  entries.set(key, entry)
}
