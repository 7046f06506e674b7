/**
 * Glance image signatures as OpenStack's cursive library verifies them (cursive/signature_utils.py,
 * what Nova and Cinder run): four image properties name the signature (base64), its hash method
 * (SHA-224/256/384/512), its key type (RSA-PSS, DSA, or one of six ECC curves) and the Barbican
 * secret that holds the signing certificate. The verifier hashes the image as it streams by and
 * checks the signature at the end, so that nothing is read twice and nothing is buffered.
 *
 * Pure: no I/O. Glance docs: https://docs.openstack.org/glance/latest/user/signature.html
 */
import { constants, createVerify, type KeyObject, type X509Certificate } from 'node:crypto'
import { InvalidInputError } from '../domain/errors.js'

/** The image properties that carry a signature, as Glance returns them (all four, or none). */
export const SIGNATURE_PROPERTIES = [
  'img_signature',
  'img_signature_hash_method',
  'img_signature_key_type',
  'img_signature_certificate_uuid',
] as const

export type SignatureProperty = (typeof SIGNATURE_PROPERTIES)[number]

/** The four properties as found on the image (absent ones undefined). */
export type SignatureProperties = Partial<Record<SignatureProperty, string | null>>

/** cursive's HASH_METHODS, by the names the property uses, with node's digest names. */
export const HASH_METHODS = {
  'SHA-224': { digest: 'sha224', bytes: 28 },
  'SHA-256': { digest: 'sha256', bytes: 32 },
  'SHA-384': { digest: 'sha384', bytes: 48 },
  'SHA-512': { digest: 'sha512', bytes: 64 },
} as const

export type HashMethod = keyof typeof HASH_METHODS

/**
 * cursive's registered key types: the public key type the certificate must hold, and for ECC the
 * curve. cursive registers ECC only for curves of 384 bits and more (names `ECC_` + the curve).
 */
export const KEY_TYPES = {
  'RSA-PSS': { key: 'rsa' },
  DSA: { key: 'dsa' },
  ECC_SECT571K1: { key: 'ec', curve: 'sect571k1' },
  ECC_SECT409K1: { key: 'ec', curve: 'sect409k1' },
  ECC_SECT571R1: { key: 'ec', curve: 'sect571r1' },
  ECC_SECT409R1: { key: 'ec', curve: 'sect409r1' },
  ECC_SECP521R1: { key: 'ec', curve: 'secp521r1' },
  ECC_SECP384R1: { key: 'ec', curve: 'secp384r1' },
} as const satisfies Record<string, { key: string; curve?: string }>

export type KeyType = keyof typeof KEY_TYPES

/** A parsed, well-formed signature of one image. */
export interface ImageSignature {
  image: string
  /** The decoded signature bytes. */
  signature: Buffer
  hashMethod: HashMethod
  keyType: KeyType
  /** The Barbican secret (uuid) of the signing certificate. */
  certificateUuid: string
}

/** Fed every chunk of the image in order; `verify` throws when the signature does not match. */
export interface ChunkVerifier {
  update(chunk: Buffer): void
  /** @throws InvalidInputError SIGNATURE_INVALID */
  verify(): void
}

const invalidProperty = (image: string, property: SignatureProperty, problem: string) =>
  new InvalidInputError(
    `image ${image} has an invalid signature property ${property}: ${problem}`,
    {
      code: 'SIGNATURE_PROPERTIES_INVALID',
      details: { field: property, image },
    },
  )

/** Canonical base64, whitespace aside (cursive decodes with Python's b64decode). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * The image's signature, or null when it carries none of the four properties (unsigned).
 * @throws InvalidInputError SIGNATURE_PROPERTIES_INVALID naming the property that is missing or
 *   unusable (as cursive's get_verifier refuses an incomplete set)
 */
export function parseSignatureProperties(
  image: string,
  props: SignatureProperties,
): ImageSignature | null {
  const present = SIGNATURE_PROPERTIES.filter((p) => props[p] !== undefined && props[p] !== null)
  if (present.length === 0) return null
  const missing = SIGNATURE_PROPERTIES.filter((p) => !present.includes(p))
  if (missing.length > 0) {
    throw new InvalidInputError(
      `image ${image} has incomplete signature properties: ${missing.join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} missing (a signed image needs all of ` +
        `${SIGNATURE_PROPERTIES.join(', ')})`,
      { code: 'SIGNATURE_PROPERTIES_INVALID', details: { field: missing[0], image, missing } },
    )
  }
  const raw = props as Record<SignatureProperty, string>
  const hashMethod = raw.img_signature_hash_method
  if (!Object.hasOwn(HASH_METHODS, hashMethod)) {
    throw invalidProperty(
      image,
      'img_signature_hash_method',
      `"${hashMethod}"; expected one of ${Object.keys(HASH_METHODS).join(', ')}`,
    )
  }
  const keyType = raw.img_signature_key_type
  if (!Object.hasOwn(KEY_TYPES, keyType)) {
    throw invalidProperty(
      image,
      'img_signature_key_type',
      `"${keyType}"; expected one of ${Object.keys(KEY_TYPES).join(', ')}`,
    )
  }
  const encoded = raw.img_signature.replace(/\s+/g, '')
  if (encoded === '' || !BASE64.test(encoded))
    throw invalidProperty(image, 'img_signature', 'not base64 (the signature, base64-encoded)')
  const certificateUuid = raw.img_signature_certificate_uuid.trim()
  if (certificateUuid === '')
    throw invalidProperty(image, 'img_signature_certificate_uuid', 'empty')
  return {
    image,
    signature: Buffer.from(encoded, 'base64'),
    hashMethod: hashMethod as HashMethod,
    keyType: keyType as KeyType,
    certificateUuid,
  }
}

/**
 * The certificate's public key, when it is of the kind the key type names (cursive's isinstance
 * check). For ECC the curve must be the one named, too: cursive accepts any EC key there, but the
 * property names a curve, and a curve below 384 bits is what its list means to keep out.
 * @throws InvalidInputError CERTIFICATE_KEY_TYPE_MISMATCH
 */
export function signingKey(certificate: X509Certificate, sig: ImageSignature): KeyObject {
  const key = certificate.publicKey
  const want: { key: string; curve?: string } = KEY_TYPES[sig.keyType]
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (key.asymmetricKeyType !== want.key || (want.curve !== undefined && curve !== want.curve)) {
    throw new InvalidInputError(
      `image ${sig.image} is signed with key type ${sig.keyType} but its certificate ${sig.certificateUuid} holds ${describeKey(key)}`,
      {
        code: 'CERTIFICATE_KEY_TYPE_MISMATCH',
        details: { field: 'img_signature_key_type', image: sig.image, keyType: sig.keyType },
      },
    )
  }
  return key
}

function describeKey(key: KeyObject): string {
  const type = key.asymmetricKeyType ?? 'unknown'
  if (type === 'ec')
    return `an EC key on ${key.asymmetricKeyDetails?.namedCurve ?? 'an unnamed curve'}`
  if (type === 'rsa') return 'an RSA key'
  if (type === 'rsa-pss') return 'an RSA-PSS-restricted key (RSASSA-PSS), which cursive cannot use'
  return `a ${type.toUpperCase()} key`
}

/**
 * cursive's PSS salt length, `padding.PSS.MAX_LENGTH`: as long as the key allows, which the
 * verifier demands exactly (emLen - hLen - 2, emLen = ceil((modulus bits - 1) / 8)).
 */
export function maxPssSaltLength(key: KeyObject, hashMethod: HashMethod): number {
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0
  return Math.ceil((bits - 1) / 8) - HASH_METHODS[hashMethod].bytes - 2
}

/**
 * A verifier of `sig` under `key` (from {@link signingKey}): RSA-PSS with MGF1 over the same hash
 * and the maximal salt, DSA and ECDSA with DER-encoded signatures, each over the hash method.
 */
export function createSignatureVerifier(sig: ImageSignature, key: KeyObject): ChunkVerifier {
  const verifier = createVerify(HASH_METHODS[sig.hashMethod].digest)
  let done = false
  return {
    update(chunk) {
      verifier.update(chunk)
    },
    verify() {
      if (done) throw new Error('verify() called twice')
      done = true
      let ok: boolean
      try {
        ok =
          sig.keyType === 'RSA-PSS'
            ? verifier.verify(
                {
                  key,
                  padding: constants.RSA_PKCS1_PSS_PADDING,
                  saltLength: maxPssSaltLength(key, sig.hashMethod),
                },
                sig.signature,
              )
            : verifier.verify({ key, dsaEncoding: 'der' }, sig.signature)
      } catch {
        // A signature OpenSSL cannot even decode (wrong length, bad DER) is simply not valid.
        ok = false
      }
      if (!ok) {
        throw new InvalidInputError(
          `image ${sig.image} failed signature verification: its ${sig.keyType} ${sig.hashMethod} ` +
            `signature does not match the image data (certificate ${sig.certificateUuid})`,
          {
            code: 'SIGNATURE_INVALID',
            details: { field: 'img_signature', image: sig.image },
          },
        )
      }
    },
  }
}
