/**
 * Who is looking: the caller's session as `GET /dashboard/session` tells it (user, project, roles,
 * and for each of the dashboard's rules whether the API's policy allows it), read once per token
 * and again when the token changes, so the page offers only the actions the API would take (the
 * API enforces them anyway). Also the login (`POST /dashboard/login`, the API asks Keystone) and
 * the logout; the token itself stays in web/api.ts's memory and is never shown.
 */
import { useEffect, useState } from 'preact/hooks'
import { ApiCallError, getJson, messageOf, onTokenChange, setToken } from './api.js'

/** `GET /dashboard/session`'s answer. */
export interface Session {
  auth_strategy: 'keystone' | 'noauth'
  user: { id: string | null; name: string | null }
  project: { id: string | null; name: string | null }
  roles: string[]
  can: Record<string, boolean>
}

/** The session as known now: `undefined` while it is read or when the API refused it (no token yet). */
let current: Session | undefined
/** Bumped at each token change, so that an answer for an older token is dropped. */
let generation = 0
let readFor = -1
const listeners = new Set<() => void>()

function changed(): void {
  for (const listener of listeners) listener()
}

function read(): void {
  if (readFor === generation) return
  const mine = (readFor = generation)
  getJson<Session>('/dashboard/session').then(
    (session) => {
      if (mine !== generation) return
      current = session
      changed()
    },
    () => {
      if (mine !== generation) return
      current = undefined
      changed()
    },
  )
}

onTokenChange(() => {
  generation++
  current = undefined
  changed()
  if (listeners.size > 0) read()
})

/** The caller's session, read once per token; `undefined` until it is known. */
export function useSession(): Session | undefined {
  const [, redraw] = useState(0)
  useEffect(() => {
    const listener = () => redraw((n) => n + 1)
    listeners.add(listener)
    read()
    return () => void listeners.delete(listener)
  }, [])
  return current
}

/**
 * Whether the caller may do what policy rule `rule` (e.g. `cyborg:device:disable`) guards: false
 * until the session is known, so that no action is offered early.
 */
export function useCan(rule: string): boolean {
  return useSession()?.can[rule] === true
}

/** What the login form sends; the domains default to `Default` on the API's side. */
export interface LoginFields {
  username: string
  password: string
  project: string
  user_domain?: string
  project_domain?: string
}

/**
 * Logs in through the API (which asks Keystone) and keeps the token in memory: every page then
 * reads again with it. @throws ApiCallError with the API's message (401: refused; 503: Keystone)
 */
export async function logIn(fields: LoginFields): Promise<void> {
  const res = await fetch('/dashboard/login', {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify(fields),
  })
  const text = await res.text()
  if (!res.ok) throw new ApiCallError(res.status, messageOf(text))
  setToken((JSON.parse(text) as { token: string }).token)
}

/** Forgets the token: every page reads again without one (and so asks for a login). */
export function logOut(): void {
  setToken('')
}
