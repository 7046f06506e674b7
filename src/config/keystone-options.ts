/**
 * Keystone's sections of the one option table in schema.ts, kept here for that file's size: the
 * keystoneauth-style client options every outbound client shares, `[service_user]` and
 * `[keystone_authtoken]`.
 */
import { bool, enumOf, int, list, optionalStr, str, url } from './options.js'

/** keystoneauth-style options for an outbound client ([placement], [nova], [glance], [barbican]); docs/auth-outbound.md. */
export function keystoneClient(service: string) {
  return {
    auth_type: enumOf(['none', 'admin_token', 'password'] as const, {
      default: 'none',
      help:
        `How to authenticate to ${service}: none (no token; use with endpoint_override), ` +
        `admin_token (a static token), or password (Keystone v3 password auth).`,
    }),
    auth_url: url({
      help: 'Keystone v3 endpoint used to get a token (auth_type = password), e.g. http://keystone:5000/v3.',
    }),
    endpoint_override: url({
      help: `Use this ${service} URL instead of looking it up in the Keystone catalog.`,
    }),
    username: optionalStr({ help: 'Keystone user (auth_type = password).' }),
    password: optionalStr({ help: 'Password of that user.', secret: true }),
    project_name: optionalStr({ help: 'Project to scope the token to.' }),
    user_domain_name: str({ default: 'Default', help: 'Domain of the user.' }),
    project_domain_name: str({ default: 'Default', help: 'Domain of the project.' }),
    region_name: optionalStr({ help: 'Region to pick the endpoint from in the catalog.' }),
    valid_interfaces: list({
      default: ['public'],
      help:
        `Catalog interfaces to use for ${service}, in order of preference (public, internal, ` +
        `admin), when auth_type = password and endpoint_override is unset.`,
    }),
    token: optionalStr({ help: 'Static token (auth_type = admin_token).', secret: true }),
  }
}

/** `[service_user]`: the service token sent with calls to Nova (docs/auth-outbound.md). */
export const serviceUserOptions = {
  send_service_user_token: bool({
    default: false,
    help: "Send this user's token as X-Service-Token with every call to Nova (what Nova's service_token_roles checks), instead of [nova] service_token.",
  }),
  auth_type: enumOf(['none', 'password'] as const, {
    default: 'none',
    help: 'How the service user authenticates: password (Keystone v3 password auth; needed when send_service_user_token = true) or none.',
  }),
  auth_url: url({
    help: 'Keystone v3 endpoint used to get the service token, e.g. http://keystone:5000/v3.',
  }),
  username: optionalStr({ help: 'Service user (it should have the service role).' }),
  password: optionalStr({ help: 'Password of the service user.', secret: true }),
  project_name: optionalStr({ help: 'Project to scope the service token to, e.g. service.' }),
  user_domain_name: str({ default: 'Default', help: 'Domain of the service user.' }),
  project_domain_name: str({ default: 'Default', help: 'Domain of the project.' }),
}

/** `[keystone_authtoken]`: how the API validates tokens (docs/auth.md). */
export const keystoneAuthtokenOptions = {
  www_authenticate_uri: url({
    help: 'Public Keystone endpoint that clients are sent to in WWW-Authenticate.',
  }),
  auth_url: url({ help: 'Keystone endpoint the API uses to validate tokens.' }),
  auth_type: enumOf(['password', 'admin_token', 'none'] as const, {
    default: 'password',
    help: 'How the API authenticates itself to Keystone to validate tokens.',
  }),
  username: optionalStr({ help: 'Service user of the API.' }),
  password: optionalStr({ help: 'Password of the service user.', secret: true }),
  project_name: optionalStr({ help: 'Project of the service user.' }),
  user_domain_name: str({ default: 'Default', help: 'Domain of the service user.' }),
  project_domain_name: str({ default: 'Default', help: 'Domain of the project.' }),
  region_name: optionalStr({ help: 'Region of the Keystone endpoint.' }),
  service_token_roles: list({
    default: ['service'],
    help: 'Roles a service token must carry to be accepted as a service token.',
  }),
  service_token_roles_required: bool({
    default: true,
    help:
      'Accept an X-Service-Token as a service token only when it carries one of ' +
      'service_token_roles. false: any valid X-Service-Token counts (the old keystonemiddleware ' +
      'behaviour).',
  }),
  token_cache_time: int({
    default: 300,
    min: 0,
    help:
      'Seconds a validated token is trusted without asking Keystone again (never past its ' +
      'expiry). This bounds how late a revocation takes effect. 0: ask Keystone on every ' +
      'request.',
  }),
  memcached_servers: list({
    default: [],
    help: 'host:port of memcached servers that cache validated tokens.',
  }),
}
