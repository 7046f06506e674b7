/**
 * `[api] enable_ssl_api`: reads `[ssl] cert_file`, `key_file` and `ca_file` and checks them before
 * the API listens, so that a missing file, a file that is not PEM or a key of another certificate
 * stops start-up with one line naming the option and the file.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { optionError, type Config } from '../config/config.js'
import type { ApiTls } from '../api/types.js'
import { errorCode } from './resources.js'
import { errorMessage } from '../domain/error-message.js'

type SslOption = 'cert_file' | 'key_file' | 'ca_file'

/** The listener's TLS material, or undefined when `[api] enable_ssl_api` is false. */
export function loadApiTls(config: Config): ApiTls | undefined {
  if (!config.api.enable_ssl_api) return undefined
  const cert = readPem(config, 'cert_file')
  const key = readPem(config, 'key_file')
  const certFile = config.ssl.cert_file!
  const keyFile = config.ssl.key_file!
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(cert)
  } catch (err) {
    throw optionError(
      config,
      'ssl',
      'cert_file',
      `${certFile} holds no PEM certificate (${errorMessage(err)})`,
    )
  }
  let privateKey: ReturnType<typeof createPrivateKey>
  try {
    privateKey = createPrivateKey(key)
  } catch (err) {
    throw optionError(
      config,
      'ssl',
      'key_file',
      `${keyFile} holds no unencrypted PEM private key (${errorMessage(err)})`,
    )
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw optionError(
      config,
      'ssl',
      'key_file',
      `the key in ${keyFile} does not belong to the certificate in ${certFile} ([ssl] cert_file)`,
    )
  }
  if (config.ssl.ca_file === undefined) return { key, cert }
  const ca = readPem(config, 'ca_file')
  try {
    new X509Certificate(ca)
  } catch (err) {
    throw optionError(
      config,
      'ssl',
      'ca_file',
      `${config.ssl.ca_file} holds no PEM certificate (${errorMessage(err)})`,
    )
  }
  return { key, cert, ca }
}

/** The file of one `[ssl]` option; unset or unreadable is a config error naming it. */
function readPem(config: Config, name: SslOption): Buffer {
  const file = config.ssl[name]
  if (file === undefined)
    throw optionError(
      config,
      'ssl',
      name,
      'a PEM file is required when [api] enable_ssl_api = true',
    )
  try {
    return readFileSync(file)
  } catch (err) {
    throw optionError(config, 'ssl', name, `cannot read ${file}: ${errorCode(err)}`)
  }
}
