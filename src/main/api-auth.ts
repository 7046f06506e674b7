/**
 * The API's authenticator from `[api] auth_strategy` and `[keystone_authtoken]` (src/api/auth.ts,
 * src/api/keystone-auth.ts). noauth logs a warning: every caller is an admin.
 */
import type { Logger } from 'pino'
import { optionError, type Config } from '../config/config.js'
import { noauthAuthenticator, type Authenticator } from '../api/auth.js'
import { createKeystoneAuthenticator } from '../api/keystone-auth.js'

/** How long one Keystone call may take. */
const KEYSTONE_TIMEOUT_MS = 30_000

/** @throws ConfigError naming the option that keystone auth is missing */
export function apiAuthenticator(config: Config, log: Logger): Authenticator {
  if (config.api.auth_strategy === 'noauth') {
    log.warn(
      { auth_strategy: 'noauth', project_id: config.api.noauth_project_id },
      '[api] auth_strategy = noauth: every caller is an admin, no token is checked; use keystone outside tests',
    )
    return noauthAuthenticator(config.api.noauth_project_id)
  }
  const ks = config.keystone_authtoken
  if (ks.auth_type !== 'password') {
    throw optionError(
      config,
      'keystone_authtoken',
      'auth_type',
      'only password is supported with [api] auth_strategy = keystone',
    )
  }
  const required = (name: 'auth_url' | 'username' | 'password' | 'project_name'): string => {
    const value = ks[name]
    if (value === undefined || value === '') {
      throw optionError(
        config,
        'keystone_authtoken',
        name,
        'is required when [api] auth_strategy = keystone',
      )
    }
    return value
  }
  const authUrl = required('auth_url')
  return createKeystoneAuthenticator({
    authUrl,
    timeoutMs: KEYSTONE_TIMEOUT_MS,
    credentials: {
      username: required('username'),
      password: required('password'),
      projectName: required('project_name'),
      userDomainName: ks.user_domain_name,
      projectDomainName: ks.project_domain_name,
    },
    wwwAuthenticateUri: ks.www_authenticate_uri ?? authUrl,
    serviceTokenRoles: [...ks.service_token_roles],
    serviceTokenRolesRequired: ks.service_token_roles_required,
    cacheTimeMs: ks.token_cache_time * 1000,
  })
}
