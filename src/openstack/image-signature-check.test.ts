/**
 * The `[glance]` signature policy before a download: unsigned images, verification off, no trusted
 * CA bundle, no key manager, and a signed image that gets its verifier (Barbican stands in as an
 * object here; test/glance/signed-images.test.ts runs the real one).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { InvalidInputError } from '../domain/errors.js'
import { createPki, type Cert, type Pki } from '../../test/support/peers/pki.js'
import type { BarbicanClient } from './barbican.js'
import { createImageSignatureCheck, type ImageSignatureOptions } from './image-signature-check.js'
import type { SignatureProperties } from './image-signature.js'

const failure = async (p: Promise<unknown>) =>
  p.then(
    () => 'no error',
    (err: Error & { code?: string }) => `${err.code}: ${err.message}`,
  )

void describe('image signature policy', () => {
  let pki: Pki
  let ca: Cert
  let signer: Cert
  let signed: { id: string; signature: SignatureProperties }
  const data = Buffer.from('bitstream: signed gzip accelerator')
  const fetched: string[] = []
  const barbican: BarbicanClient = {
    getCertificate(uuid, image) {
      fetched.push(uuid)
      if (uuid === 'cert-1') return Promise.resolve(Buffer.from(signer.pem))
      return Promise.reject(
        new InvalidInputError(`no ${uuid} for ${image}`, { code: 'CERTIFICATE_NOT_FOUND' }),
      )
    },
  }
  const check = (o: Partial<ImageSignatureOptions> = {}) =>
    createImageSignatureCheck({
      verify: true,
      require: false,
      trusted: { file: 'ca.pem', certificates: [new X509Certificate(ca.pem)] },
      barbican,
      ...o,
    })
  const unsigned = { id: 'plain', signature: {} }

  before(async () => {
    pki = await createPki()
    ca = await pki.ca('Policy CA')
    signer = await pki.leaf('policy signer', ca)
    const file = path.join(pki.dir, 'image.bin')
    await writeFile(file, data)
    signed = {
      id: 'signed',
      signature: {
        img_signature: await pki.sign(file, signer),
        img_signature_hash_method: 'SHA-256',
        img_signature_key_type: 'RSA-PSS',
        img_signature_certificate_uuid: 'cert-1',
      },
    }
  })
  after(async () => pki?.cleanup())

  void it('lets an unsigned image through unless signatures are required', async () => {
    assert.equal(await check().prepare(unsigned), undefined)
    assert.equal(
      await failure(check({ require: true }).prepare(unsigned)),
      'IMAGE_UNSIGNED: image plain is not signed (it has no img_signature properties) and [glance] require_signed_images = true',
    )
  })

  void it('ignores signatures when verification is off, without asking Barbican', async () => {
    fetched.length = 0
    assert.equal(await check({ verify: false }).prepare(signed), undefined)
    const broken = { id: 'x', signature: { img_signature: 'AAAA' } }
    assert.equal(await check({ verify: false }).prepare(broken), undefined)
    assert.deepEqual(fetched, [])
  })

  void it('refuses a signed image without trusted_ca_file, or without a key manager', async () => {
    assert.match(
      await failure(check({ trusted: undefined }).prepare(signed)),
      /^CERTIFICATE_UNTRUSTED: image signed is signed, but \[glance\] trusted_ca_file is unset/,
    )
    assert.match(
      await failure(check({ barbican: undefined }).prepare(signed)),
      /^NO_KEY_MANAGER: .*configure \[barbican\]$/,
    )
  })

  void it('fetches the certificate, checks it, and hands back a verifier of the data', async () => {
    const verifier = (await check().prepare(signed))!
    verifier.update(data)
    verifier.verify()
    const again = (await check().prepare(signed))!
    again.update(Buffer.from('bitstream: something else'))
    assert.throws(() => again.verify(), { code: 'SIGNATURE_INVALID' })
  })

  void it('stops before the download on an unknown certificate or an untrusted chain', async () => {
    const unknown = {
      ...signed,
      signature: { ...signed.signature, img_signature_certificate_uuid: 'nope' },
    }
    assert.match(await failure(check().prepare(unknown)), /^CERTIFICATE_NOT_FOUND/)
    const otherCa = await pki.ca('Unrelated CA')
    assert.match(
      await failure(
        check({
          trusted: { file: 'ca.pem', certificates: [new X509Certificate(otherCa.pem)] },
        }).prepare(signed),
      ),
      /^CERTIFICATE_UNTRUSTED: .*no certificate in \[glance\] trusted_ca_file \(ca.pem\) is its issuer/,
    )
    const later = () => new Date(Date.now() + 60 * 86400_000)
    assert.match(await failure(check({ now: later }).prepare(signed)), /^CERTIFICATE_EXPIRED/)
    const typo = {
      ...signed,
      signature: { ...signed.signature, img_signature_key_type: 'ECC_SECP384R1' },
    }
    assert.match(await failure(check().prepare(typo)), /^CERTIFICATE_KEY_TYPE_MISMATCH/)
  })
})
