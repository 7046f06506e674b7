/**
 * Validation of an image's signing certificate, as cursive's certificate_utils does it (what Nova
 * runs with `[glance] enable_certificate_validation`): the certificate must be within its validity
 * dates, and chain through certificates of a trusted set up to a self-signed one in that set. A
 * trusted certificate can sign only while within its own dates and when it is a CA (basic
 * constraints cA) with key usage keyCertSign; every CA's path length constraint must allow the
 * chain below it. Here the trusted set is `[glance] trusted_ca_file`, a PEM bundle of roots and
 * intermediates, instead of Nova's list of Barbican secrets.
 *
 * Differences from cursive, each stricter or safer: a CA without a path length constraint allows
 * any length (RFC 5280; cursive 0.2.3 fails such chains with a TypeError), a signing certificate
 * whose key usage leaves out digitalSignature is refused, and a chain that loops is refused.
 *
 * Pure: no I/O. Certificates are node:crypto X509Certificate objects.
 */
import { X509Certificate } from 'node:crypto'
import { InvalidInputError } from '../domain/errors.js'
import { certificateExtensions } from './x509-extensions.js'

/** The signing certificate and the image it signs, for messages. */
export interface SigningCertificate {
  certificate: X509Certificate
  /** The Barbican secret uuid it came from. */
  uuid: string
  image: string
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g

/**
 * One certificate from a Barbican payload: PEM (what Barbican stores for `certificate` secrets and
 * castellan reads) or DER.
 * @throws InvalidInputError CERTIFICATE_INVALID
 */
export function parseCertificate(payload: Buffer, uuid: string, image: string): X509Certificate {
  const text = payload.toString('latin1')
  const pem = text.includes('-----BEGIN') ? text.match(PEM_BLOCK)?.[0] : undefined
  try {
    return new X509Certificate(pem ?? payload)
  } catch (err) {
    throw new InvalidInputError(
      `signing certificate ${uuid} of image ${image} is not an X.509 certificate (PEM or DER): ${(err as Error).message}`,
      { code: 'CERTIFICATE_INVALID', details: { field: 'img_signature_certificate_uuid', image } },
    )
  }
}

/** Every certificate of a PEM bundle. @throws Error naming the block that does not parse, or none found */
export function parseCaBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_BLOCK) ?? []
  if (blocks.length === 0) throw new Error('no PEM certificate (-----BEGIN CERTIFICATE-----) in it')
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block)
    } catch (err) {
      throw new Error(`certificate ${i + 1} does not parse: ${(err as Error).message}`, {
        cause: err,
      })
    }
  })
}

/** `CN=signer, O=Example`: a certificate's subject (or issuer) on one line. */
export const nameOf = (dn: string) => dn.split('\n').join(', ')

const certError = (signing: SigningCertificate, code: string, problem: string) =>
  new InvalidInputError(
    `signing certificate ${signing.uuid} (${nameOf(signing.certificate.subject)}) of image ${signing.image} ${problem}`,
    {
      code,
      details: {
        field: 'img_signature_certificate_uuid',
        image: signing.image,
        certificate: signing.uuid,
      },
    },
  )

/**
 * The signing certificate is within its validity dates at `now`, and its key usage, if any,
 * allows digital signatures.
 * @throws InvalidInputError CERTIFICATE_EXPIRED, CERTIFICATE_NOT_YET_VALID, CERTIFICATE_INVALID
 */
export function checkSigningCertificate(signing: SigningCertificate, now: Date): void {
  const { certificate } = signing
  if (now < certificate.validFromDate)
    throw certError(
      signing,
      'CERTIFICATE_NOT_YET_VALID',
      `is not valid before ${certificate.validFromDate.toISOString()}`,
    )
  if (now > certificate.validToDate)
    throw certError(
      signing,
      'CERTIFICATE_EXPIRED',
      `expired on ${certificate.validToDate.toISOString()}`,
    )
  const usage = certificateExtensions(certificate.raw).keyUsage
  if (usage && !usage.digitalSignature)
    throw certError(
      signing,
      'CERTIFICATE_INVALID',
      'has a key usage without digitalSignature: it may not sign images',
    )
}

interface Candidate {
  certificate: X509Certificate
  /** Why it cannot sign, or undefined when it can. */
  unusable: string | undefined
  pathLength: number | undefined
}

/** cursive's can_sign_certificates plus is_within_valid_dates, as a reason. */
function candidate(certificate: X509Certificate, now: Date): Candidate {
  const ext = certificateExtensions(certificate.raw)
  const pathLength = ext.basicConstraints?.pathLength
  if (now < certificate.validFromDate || now > certificate.validToDate)
    return {
      certificate,
      pathLength,
      unusable: `is outside its validity dates (${certificate.validFromDate.toISOString()} to ${certificate.validToDate.toISOString()})`,
    }
  if (!ext.basicConstraints?.ca)
    return { certificate, pathLength, unusable: 'is not a CA (basic constraints)' }
  if (!ext.keyUsage?.keyCertSign)
    return {
      certificate,
      pathLength,
      unusable: 'may not sign certificates (key usage keyCertSign)',
    }
  return { certificate, pathLength, unusable: undefined }
}

/** `issuer` signed `subject`: names match (OpenSSL's check_issued) and the signature verifies. */
const issued = (issuer: X509Certificate, subject: X509Certificate) =>
  subject.issuer === issuer.subject &&
  subject.checkIssued(issuer) &&
  subject.verify(issuer.publicKey)

/**
 * The signing certificate chains to a self-signed certificate of `trusted` through usable ones,
 * within every path length constraint. Run {@link checkSigningCertificate} first.
 * @param trustedFile the bundle's path, for messages
 * @throws InvalidInputError CERTIFICATE_UNTRUSTED naming where the chain stops and why
 */
export function verifyChain(
  signing: SigningCertificate,
  trusted: readonly X509Certificate[],
  now: Date,
  trustedFile: string,
): void {
  const candidates = trusted.map((c) => candidate(c, now))
  // Root first, the signing certificate last (cursive's order).
  const chain: Candidate[] = [
    { certificate: signing.certificate, unusable: undefined, pathLength: undefined },
  ]
  for (;;) {
    const child = chain[0]!.certificate
    const parent = candidates.find((c) => !c.unusable && issued(c.certificate, child))
    if (!parent) {
      const named = candidates.filter((c) => c.certificate.subject === child.issuer)
      const why =
        named.length === 0
          ? `no certificate in [glance] trusted_ca_file (${trustedFile}) is its issuer (${nameOf(child.issuer)})`
          : named
              .map(
                (c) =>
                  `${nameOf(c.certificate.subject)} in ${trustedFile} ${c.unusable ?? 'did not sign it (signature mismatch)'}`,
              )
              .join('; ')
      const where =
        child === signing.certificate ? '' : ` (its chain stops at ${nameOf(child.subject)})`
      throw certError(signing, 'CERTIFICATE_UNTRUSTED', `is not trusted${where}: ${why}`)
    }
    if (parent.certificate.fingerprint256 === child.fingerprint256) break
    if (chain.some((c) => c.certificate.fingerprint256 === parent.certificate.fingerprint256))
      throw certError(
        signing,
        'CERTIFICATE_UNTRUSTED',
        `is not trusted: its chain in ${trustedFile} loops at ${nameOf(parent.certificate.subject)}`,
      )
    chain.unshift(parent)
  }
  // cursive's path length rule: a CA may have (pathLength) non-self-issued CAs below it, not
  // counting itself and the signing certificate.
  for (let i = 0; i < chain.length - 1; i++) {
    const below = Math.max(chain.length - i - 2, 0)
    const limit = chain[i]!.pathLength
    if (limit !== undefined && limit < below) {
      throw certError(
        signing,
        'CERTIFICATE_UNTRUSTED',
        `is not trusted: CA ${nameOf(chain[i]!.certificate.subject)} allows ${limit} intermediate CA(s) below it, the chain has ${below}`,
      )
    }
  }
}
