/**
 * Image signatures as cursive reads them: the four properties, the key type against the
 * certificate's key, and the streaming verifier over signatures made by `openssl dgst -sign`.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createPki, type Cert, type Pki } from '../../test/support/peers/pki.js'
import {
  createSignatureVerifier,
  maxPssSaltLength,
  parseSignatureProperties,
  signingKey,
  type ImageSignature,
  type SignatureProperties,
} from './image-signature.js'

const UUID = '6a1f0c1e-2b7d-4b8e-9c55-0f3a9d1e2c44'
const props = (over: SignatureProperties = {}): SignatureProperties => ({
  img_signature: 'c2lnbmF0dXJl',
  img_signature_hash_method: 'SHA-256',
  img_signature_key_type: 'RSA-PSS',
  img_signature_certificate_uuid: UUID,
  ...over,
})
const codeOf = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    return `${(err as { code?: string }).code}: ${(err as Error).message}`
  }
  return 'no error'
}

void describe('parseSignatureProperties', () => {
  void it('reads the four properties; none at all is an unsigned image', () => {
    assert.equal(parseSignatureProperties('img', {}), null)
    const sig = parseSignatureProperties('img', props())!
    assert.deepEqual(sig.signature, Buffer.from('signature'))
    assert.equal(sig.hashMethod, 'SHA-256')
    assert.equal(sig.keyType, 'RSA-PSS')
    assert.equal(sig.certificateUuid, UUID)
  })

  void it('names what is missing from an incomplete set', () => {
    const p = props()
    delete p.img_signature_key_type
    delete p.img_signature_certificate_uuid
    assert.equal(
      codeOf(() => parseSignatureProperties('img', p)),
      'SIGNATURE_PROPERTIES_INVALID: image img has incomplete signature properties: ' +
        'img_signature_key_type, img_signature_certificate_uuid are missing (a signed image needs ' +
        'all of img_signature, img_signature_hash_method, img_signature_key_type, ' +
        'img_signature_certificate_uuid)',
    )
  })

  void it('refuses hash methods, key types and encodings cursive does not know', () => {
    assert.match(
      codeOf(() => parseSignatureProperties('img', props({ img_signature_hash_method: 'SHA-1' }))),
      /^SIGNATURE_PROPERTIES_INVALID: .*img_signature_hash_method: "SHA-1"; expected one of SHA-224, SHA-256, SHA-384, SHA-512$/,
    )
    for (const bad of ['ECC_SECP256R1', 'RSA', 'ecc_secp384r1']) {
      assert.match(
        codeOf(() => parseSignatureProperties('img', props({ img_signature_key_type: bad }))),
        /^SIGNATURE_PROPERTIES_INVALID: .*img_signature_key_type: ".*"; expected one of RSA-PSS, DSA, ECC_SECT571K1/,
      )
    }
    for (const bad of ['', 'not base64!', 'abc', 'ab=c']) {
      assert.match(
        codeOf(() => parseSignatureProperties('img', props({ img_signature: bad }))),
        /^SIGNATURE_PROPERTIES_INVALID: .*property img_signature: not base64/,
      )
    }
    // Line breaks inside the base64 (as `base64` wraps it) are fine.
    assert.ok(parseSignatureProperties('img', props({ img_signature: 'c2ln\nbmF0\ndXJl' })))
  })
})

void describe('signatures made by openssl dgst -sign', () => {
  let pki: Pki
  let data: string
  const certs: Record<string, Cert> = {}
  const x509 = (c: Cert) => new X509Certificate(c.pem)
  const sigOf = (b64: string, keyType: string, hashMethod = 'SHA-256'): ImageSignature =>
    parseSignatureProperties(
      'img',
      props({
        img_signature: b64,
        img_signature_key_type: keyType,
        img_signature_hash_method: hashMethod,
      }),
    )!
  const check = (cert: Cert, sig: ImageSignature, bytes: Buffer) => {
    const v = createSignatureVerifier(sig, signingKey(x509(cert), sig))
    // In uneven chunks, as a download delivers them.
    for (let at = 0; at < bytes.length; at += 7919) v.update(bytes.subarray(at, at + 7919))
    v.verify()
  }
  let bytes: Buffer

  before(async () => {
    pki = await createPki()
    const ca = await pki.ca('Unit CA')
    bytes = Buffer.alloc(300_000)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 8)) & 0xff
    data = path.join(pki.dir, 'image.bin')
    await writeFile(data, bytes)
    for (const key of [
      'rsa',
      'rsa3072',
      'dsa',
      'ec:P-384',
      'ec:P-521',
      'ec:sect571k1',
      'ec:P-256',
    ] as const)
      certs[key] = await pki.leaf(`signer ${key}`, ca, { key })
  })
  after(async () => pki?.cleanup())

  void it('RSA-PSS with the maximal salt verifies, for every hash method and key size', async () => {
    for (const key of ['rsa', 'rsa3072']) {
      for (const [hash, method] of [
        ['sha224', 'SHA-224'],
        ['sha256', 'SHA-256'],
        ['sha384', 'SHA-384'],
        ['sha512', 'SHA-512'],
      ] as const) {
        const sig = sigOf(await pki.sign(data, certs[key]!, hash), 'RSA-PSS', method)
        check(certs[key]!, sig, bytes)
      }
    }
    // cursive's PSS.MAX_LENGTH: 256-byte modulus, 32-byte hash → 222.
    assert.equal(maxPssSaltLength(x509(certs.rsa!).publicKey, 'SHA-256'), 222)
  })

  void it('ECDSA on P-384, P-521 and sect571k1, and DSA, verify', async () => {
    for (const [key, type] of [
      ['ec:P-384', 'ECC_SECP384R1'],
      ['ec:P-521', 'ECC_SECP521R1'],
      ['ec:sect571k1', 'ECC_SECT571K1'],
      ['dsa', 'DSA'],
    ] as const) {
      check(certs[key]!, sigOf(await pki.sign(data, certs[key]!, 'sha384'), type, 'SHA-384'), bytes)
    }
  })

  void it('a flipped bit, a wrong hash method or a short PSS salt is SIGNATURE_INVALID', async () => {
    const good = await pki.sign(data, certs.rsa!)
    const tampered = Buffer.from(bytes)
    tampered[1234]! ^= 1
    assert.match(
      codeOf(() => check(certs.rsa!, sigOf(good, 'RSA-PSS'), tampered)),
      /^SIGNATURE_INVALID: image img failed signature verification: its RSA-PSS SHA-256 signature does not match the image data \(certificate 6a1f/,
    )
    assert.match(
      codeOf(() => check(certs.rsa!, sigOf(good, 'RSA-PSS', 'SHA-512'), bytes)),
      /^SIGNATURE_INVALID/,
    )
    // cursive verifies with the maximal salt only; OpenSSL 3.1+'s default for signing is shorter.
    const digestSalt = await pki.sign(data, certs.rsa!, 'sha256', 'digest')
    assert.match(
      codeOf(() => check(certs.rsa!, sigOf(digestSalt, 'RSA-PSS'), bytes)),
      /^SIGNATURE_INVALID/,
    )
    const ec = await pki.sign(data, certs['ec:P-384']!, 'sha256')
    assert.match(
      codeOf(() => check(certs['ec:P-384']!, sigOf(ec, 'ECC_SECP384R1'), tampered)),
      /^SIGNATURE_INVALID/,
    )
    // Garbage that is not even DER is refused the same way, not thrown as an OpenSSL error.
    assert.match(
      codeOf(() => check(certs['ec:P-384']!, sigOf('AAAA', 'ECC_SECP384R1'), bytes)),
      /^SIGNATURE_INVALID/,
    )
  })

  void it('the key type must match the certificate’s key, curve included', async () => {
    const sig = (type: string) => sigOf('AAAA', type)
    assert.equal(
      codeOf(() => signingKey(x509(certs.rsa!), sig('ECC_SECP384R1'))),
      `CERTIFICATE_KEY_TYPE_MISMATCH: image img is signed with key type ECC_SECP384R1 but its certificate ${UUID} holds an RSA key`,
    )
    assert.match(
      codeOf(() => signingKey(x509(certs['ec:P-384']!), sig('RSA-PSS'))),
      /holds an EC key on secp384r1$/,
    )
    assert.match(
      codeOf(() => signingKey(x509(certs.dsa!), sig('RSA-PSS'))),
      /holds a DSA key$/,
    )
    assert.match(
      codeOf(() => signingKey(x509(certs['ec:P-521']!), sig('ECC_SECP384R1'))),
      /^CERTIFICATE_KEY_TYPE_MISMATCH: .*holds an EC key on secp521r1$/,
    )
    // cursive would take any EC key for an ECC_ type; P-256 is below its list.
    assert.match(
      codeOf(() => signingKey(x509(certs['ec:P-256']!), sig('ECC_SECP384R1'))),
      /holds an EC key on prime256v1$/,
    )
  })
})
