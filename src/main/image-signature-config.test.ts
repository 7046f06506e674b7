/**
 * `[glance]` signature options and `[barbican]` as the agent reads them at start (resources.ts):
 * combinations that could never verify anything fail at start with the option's line, not at the
 * first bind.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '../config/config.js'
import { file } from '../../test/support/config.js'
import { createPki, type Pki } from '../../test/support/peers/pki.js'
import { imageSignatureCheck } from './resources.js'

const config = (env: Record<string, string>) =>
  loadConfig({ files: [], env, hostname: 'fpga-1', cwd: '/srv/cyborg' })
const startError = (env: Record<string, string>) => {
  try {
    imageSignatureCheck(config(env))
  } catch (err) {
    return (err as Error).message
  }
  return 'no error'
}
const BROKEN = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'

void describe('image signature options at start', () => {
  let pki: Pki
  let bundle: string
  before(async () => {
    pki = await createPki()
    bundle = await pki.bundle('ca.pem', [await pki.ca('Start CA', undefined, { key: 'ec:P-384' })])
  })
  after(async () => pki?.cleanup())

  void it('the defaults start: signed images are verified, unsigned ones pass', () => {
    assert.equal(startError({}), 'no error')
  })

  void it('require_signed_images needs verification, a CA bundle and Barbican', () => {
    assert.equal(
      startError({
        CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: 'true',
        CYBORG_GLANCE__VERIFY_IMAGE_SIGNATURES: 'false',
      }),
      'CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: [glance] require_signed_images = "true": needs verify_image_signatures = true',
    )
    assert.match(
      startError({ CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: 'true' }),
      /\[glance\] trusted_ca_file .*is required when require_signed_images = true/,
    )
    assert.match(
      startError({
        CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: 'true',
        CYBORG_GLANCE__TRUSTED_CA_FILE: bundle,
      }),
      /\[barbican\] auth_type .*require_signed_images = true reads signing certificates from Barbican/,
    )
    assert.equal(
      startError({
        CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: 'true',
        CYBORG_GLANCE__TRUSTED_CA_FILE: bundle,
        CYBORG_BARBICAN__ENDPOINT_OVERRIDE: 'http://barbican:9311',
      }),
      'no error',
    )
  })

  void it('an unreadable or empty trusted_ca_file fails at start', () => {
    assert.match(
      startError({ CYBORG_GLANCE__TRUSTED_CA_FILE: '/nonexistent/ca.pem' }),
      /^CYBORG_GLANCE__TRUSTED_CA_FILE: \[glance\] trusted_ca_file = "\/nonexistent\/ca.pem": unusable: ENOENT$/,
    )
    assert.match(
      startError({ CYBORG_GLANCE__TRUSTED_CA_FILE: file('not a certificate\n') }),
      /trusted_ca_file = .*: unusable: no PEM certificate/,
    )
    assert.match(
      startError({ CYBORG_GLANCE__TRUSTED_CA_FILE: file(BROKEN) }),
      /unusable: certificate 1 does not parse/,
    )
  })

  void it('[barbican] with password auth needs its credentials', () => {
    assert.match(
      startError({
        CYBORG_BARBICAN__AUTH_TYPE: 'password',
        CYBORG_BARBICAN__AUTH_URL: 'http://ks:5000/v3',
      }),
      /\[barbican\] username = "": is required when auth_type = password/,
    )
  })
})
