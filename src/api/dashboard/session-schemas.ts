/** The dashboard's login and session (session.ts): request and answer schemas, and their docs. */
import { Type } from '@sinclair/typebox'
import { errors, guarded, type RouteDoc } from '../schemas/common.js'

/** Keystone's own limits: names of up to 255 characters; passwords are bounded more loosely. */
const name = (description: string) => Type.String({ minLength: 1, maxLength: 255, description })

export const LoginBody = Type.Object(
  {
    username: name('The Keystone user name'),
    password: Type.String({ minLength: 1, maxLength: 4096, description: 'Never logged' }),
    project: name('The name of the project the token is scoped to'),
    user_domain: Type.Optional(name('The user’s domain name; `Default` when left out')),
    project_domain: Type.Optional(name('The project’s domain name; `Default` when left out')),
  },
  { additionalProperties: false },
)

const Named = Type.Object({
  id: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()], { description: 'null when not known' }),
})

export const LoginAnswer = Type.Object({
  token: Type.String({
    description: 'The Keystone token: send it as X-Auth-Token; keep it in memory',
  }),
  expires_at: Type.String({ format: 'date-time' }),
  user: Named,
  project: Named,
  roles: Type.Array(Type.String()),
})

export const SessionAnswer = Type.Object({
  auth_strategy: Type.Union([Type.Literal('keystone'), Type.Literal('noauth')]),
  user: Named,
  project: Named,
  roles: Type.Array(Type.String()),
  can: Type.Record(Type.String(), Type.Boolean(), {
    description:
      'For each rule the dashboard offers an action or a page for: whether policy allows it',
  }),
})

/** The login's body is small: anything larger is refused before it is read. */
export const LOGIN_BODY_LIMIT = 16 * 1024

export const loginDoc: RouteDoc = {
  summary: 'Log in to the dashboard with a Keystone user name, password and project',
  description:
    'The API asks Keystone for a project-scoped token (password auth) on the caller’s behalf, so ' +
    'the browser never needs Keystone’s address. Needs no token. With `auth_strategy = noauth` it ' +
    'answers 400: no login is needed. After 10 refused logins from one address within a minute, ' +
    'further attempts are answered 429 until the minute has passed.',
  tags: ['dashboard'],
  security: [],
  body: LoginBody,
  response: { 200: LoginAnswer, ...errors(400, 401, 413, 415, 429, 503) },
}

export const sessionDoc: RouteDoc = {
  summary: 'Who the caller is, and which of the dashboard’s actions the policy allows them',
  description:
    'The rules are evaluated by the API’s own policy enforcer for the caller’s token; a rule this ' +
    'API does not know is answered false. The token itself is never echoed.',
  tags: ['dashboard'],
  response: { 200: SessionAnswer, ...guarded() },
}
