/**
 * The Barbican (OpenStack key manager) client of image signature verification: one certificate
 * secret by uuid, as castellan's Barbican key manager reads it for cursive. First the secret's
 * metadata (`GET /v1/secrets/{uuid}`: its `secret_type` must be `certificate`), then its payload
 * (`GET /v1/secrets/{uuid}/payload`, with the content type the secret was stored with as Accept,
 * as python-barbicanclient does). Barbican API: https://docs.openstack.org/barbican/latest/api/
 */
import { InvalidInputError, UnavailableError } from '../domain/errors.js'
import { exchangeFailure, OPENSTACK_ANSWER_LIMIT_BYTES, readAnswer } from './answer-limit.js'
import {
  OpenStackHttpError,
  requestJson,
  resolveTarget,
  type RequestAuth,
  type ServiceEndpoint,
} from './http.js'

export interface BarbicanSettings {
  /** endpoint_override, or a description of the catalog's key-manager entry. */
  endpoint: string
  token?: string
  /** `password`: Keystone tokens, and the catalog's `key-manager` endpoint unless endpoint_override is set. */
  auth?: RequestAuth
  timeoutMs: number
  /** Told of every request (cyborg_peer_request*). */
  onCall?: (method: string, path: string, status: number, seconds: number) => void
}

export interface BarbicanClient {
  /**
   * The payload of certificate secret `uuid` (PEM, or DER when it was stored as octets).
   * `image` only names the image in messages.
   * @throws InvalidInputError CERTIFICATE_NOT_FOUND (404), CERTIFICATE_FORBIDDEN (401/403),
   *   CERTIFICATE_INVALID (not a certificate secret); UnavailableError when Barbican does not answer
   */
  getCertificate(uuid: string, image: string): Promise<Buffer>
}

interface SecretMetadata {
  secret_type?: string
  status?: string
  content_types?: { default?: string } | null
}

export function createBarbicanClient(settings: BarbicanSettings): BarbicanClient {
  const ep: ServiceEndpoint = {
    service: 'Barbican',
    url: settings.endpoint.replace(/\/+$/, ''),
    headers: settings.token === undefined ? {} : { 'x-auth-token': settings.token },
    timeoutMs: settings.timeoutMs,
    auth: settings.auth,
    ...(settings.onCall ? { onCall: settings.onCall } : {}),
  }
  return {
    async getCertificate(uuid, image) {
      const path = `/v1/secrets/${encodeURIComponent(uuid)}`
      const fail = (code: string, problem: string) =>
        new InvalidInputError(
          `signing certificate ${uuid} of image ${image} (img_signature_certificate_uuid) ${problem}`,
          { code, details: { field: 'img_signature_certificate_uuid', image, certificate: uuid } },
        )
      let meta: SecretMetadata
      try {
        meta = (await requestJson(ep, 'GET', path)).body as SecretMetadata
      } catch (err) {
        if (err instanceof OpenStackHttpError) {
          if (err.status === 404) throw fail('CERTIFICATE_NOT_FOUND', 'is not in Barbican (404)')
          if (err.status === 401 || err.status === 403)
            throw fail(
              'CERTIFICATE_FORBIDDEN',
              `cannot be read with [barbican]'s credentials (${err.status}): store it in their project or grant them read access (openstack acl user add)`,
            )
        }
        if (err instanceof UnavailableError)
          throw new UnavailableError(
            `cannot fetch signing certificate ${uuid} of image ${image}: ${err.message}`,
            { code: 'KEY_MANAGER_UNAVAILABLE', cause: err },
          )
        throw err
      }
      if (meta.secret_type !== 'certificate')
        throw fail(
          'CERTIFICATE_INVALID',
          `is a Barbican secret of type ${meta.secret_type ?? 'unknown'}, not certificate`,
        )
      const accept = meta.content_types?.default ?? 'application/octet-stream'
      return payload(ep, `${path}/payload`, accept, fail)
    },
  }
}

/** The raw bytes of a payload GET, retried once after a 401 with fresh tokens (as requestJson). */
async function payload(
  ep: ServiceEndpoint,
  path: string,
  accept: string,
  fail: (code: string, problem: string) => Error,
): Promise<Buffer> {
  for (let attempt = 1; ; attempt++) {
    const target = await resolveTarget(ep)
    const started = performance.now()
    const unavailable = (err: unknown) =>
      new UnavailableError(`Barbican GET ${path}: ${exchangeFailure(err, ep.timeoutMs)}`, {
        code: 'KEY_MANAGER_UNAVAILABLE',
        cause: err,
      })
    let res: Response
    try {
      // The one signal bounds connect, headers and the body read below (answer-limit.ts).
      res = await fetch(target.url + path, {
        headers: { ...target.headers, accept },
        signal: AbortSignal.timeout(ep.timeoutMs),
      })
    } catch (err) {
      ep.onCall?.('GET', path, 0, (performance.now() - started) / 1000)
      throw unavailable(err)
    }
    ep.onCall?.('GET', path, res.status, (performance.now() - started) / 1000)
    const answer = await readAnswer(res.body, OPENSTACK_ANSWER_LIMIT_BYTES).catch(
      (err: unknown) => {
        throw unavailable(err)
      },
    )
    if (res.ok) return answer
    const text = answer.toString('utf8', 0, 300)
    if (res.status === 401 && ep.auth && attempt === 1) {
      ep.auth.rejected(target.headers)
      continue
    }
    if (res.status === 404) throw fail('CERTIFICATE_NOT_FOUND', 'has no payload in Barbican (404)')
    if (res.status === 401 || res.status === 403)
      throw fail(
        'CERTIFICATE_FORBIDDEN',
        `payload cannot be read with [barbican]'s credentials (${res.status})`,
      )
    if (res.status >= 500)
      throw new UnavailableError(`Barbican GET ${path} answered ${res.status}: ${text}`, {
        code: 'KEY_MANAGER_UNAVAILABLE',
      })
    throw fail('CERTIFICATE_INVALID', `could not be read from Barbican (${res.status}: ${text})`)
  }
}
