/**
 * URL form checks for connection options. Config may import only the domain, so this repeats the
 * *form* of src/db/core/connection.ts's parser (scheme, host, database name); src/db still does the
 * real parsing when it connects, and both accept the same strings.
 */

const DB_DRIVERS = new Set(['sqlite', 'postgresql', 'postgres', 'mysql', 'mariadb'])

/**
 * True for `sqlite://` (memory), `sqlite:///relative`, `sqlite:////absolute`, and
 * `postgresql[+driver]://…/db`, `postgres://…/db`, `mysql[+driver]://…/db`, `mariadb://…/db`.
 */
export function checkDatabaseUrl(url: string): boolean {
  const m = /^([a-z0-9]+)(\+[a-z0-9]+)?:\/\/(.*)$/i.exec(url)
  const driver = m?.[1]?.toLowerCase()
  if (m === null || driver === undefined || !DB_DRIVERS.has(driver)) return false
  let rest = m[3] ?? ''
  if (driver === 'sqlite') return rest === '' || rest.startsWith('/')
  // MariaDB/MySQL take a host list (`h1:3306,h2:3306`, docs/deploy.md "Galera"): check each entry, then the first as the URL's.
  const list = /^(?:[^@/]*@)?([^/?#]*)/.exec(rest)?.[1] ?? ''
  if (list.includes(',')) {
    if (!driver.startsWith('m')) return false
    if (!list.split(',').every((h) => /^(\[[^\]]+\]|[^:[\]]+)(:\d{1,5})?$/.test(h))) return false
    rest = rest.replace(list, list.split(',')[0]!)
  }
  let u: URL
  try {
    u = new URL(`http://${rest}`)
  } catch {
    return false
  }
  return u.hostname !== '' && u.pathname.replace(/^\//, '') !== ''
}

/** True for oslo.messaging's `rabbit://[user:pass@]host[:port][,[user:pass@]host2[:port]…][/vhost]`. */
export function checkTransportUrl(url: string): boolean {
  const m = /^rabbit:\/\/(.+)$/i.exec(url)
  if (m === null || m[1] === undefined) return false
  const body = m[1]
  const slash = body.indexOf('/', body.lastIndexOf('@') + 1)
  const hosts = slash < 0 ? body : body.slice(0, slash)
  return hosts.split(',').every((h) => /^([^@]*@)?[^@:,/]+(:\d{1,5})?$/.test(h))
}

/** Replaces every password in a (possibly multi-host) URL with `***`. */
export function redactUrlPassword(url: string): string {
  return url.replace(/([/,][^:/@,]*:)[^@]*@/g, '$1***@')
}
