/**
 * The two X.509 extensions certificate validation needs and node:crypto's X509Certificate does not
 * expose in full: key usage (RFC 5280 §4.2.1.3) and basic constraints with its path length
 * (§4.2.1.9). Read from the certificate's DER with a minimal reader: the certificate itself was
 * already parsed by OpenSSL, so only the fields are located here, nothing is trusted from them.
 */

/** What a certificate's extensions say about it; `undefined` fields: the extension is absent. */
export interface CertificateExtensions {
  /** Key usage bits (digitalSignature, keyCertSign), or undefined without the extension. */
  keyUsage?: { digitalSignature: boolean; keyCertSign: boolean }
  /** Basic constraints: cA, and pathLenConstraint (undefined: no limit). */
  basicConstraints?: { ca: boolean; pathLength: number | undefined }
}

interface Tlv {
  tag: number
  /** Offset of the first content byte. */
  start: number
  /** Offset just past the content. */
  end: number
}

/** The DER element at `offset` (tag, definite length). @throws Error on truncated input */
function readTlv(der: Uint8Array, offset: number): Tlv {
  const tag = der[offset]
  let length = der[offset + 1]
  if (tag === undefined || length === undefined) throw new Error('truncated DER')
  let start = offset + 2
  if (length & 0x80) {
    const bytes = length & 0x7f
    if (bytes === 0 || bytes > 4) throw new Error('unsupported DER length')
    length = 0
    for (let i = 0; i < bytes; i++) length = length * 256 + (der[start + i] ?? 0)
    start += bytes
  }
  const end = start + length
  if (end > der.length) throw new Error('truncated DER')
  return { tag, start, end }
}

/** The elements inside a constructed element. */
function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = []
  for (let at = parent.start; at < parent.end;) {
    const child = readTlv(der, at)
    out.push(child)
    at = child.end
  }
  return out
}

const hex = (der: Uint8Array, t: Tlv) => Buffer.from(der.subarray(t.start, t.end)).toString('hex')

/** DER contents of the OIDs 2.5.29.15 (keyUsage) and 2.5.29.19 (basicConstraints). */
const KEY_USAGE = '551d0f'
const BASIC_CONSTRAINTS = '551d13'

/**
 * Key usage and basic constraints of a DER certificate (`X509Certificate.raw`).
 * @throws Error when the DER does not have the shape of a certificate
 */
export function certificateExtensions(der: Uint8Array): CertificateExtensions {
  const certificate = readTlv(der, 0)
  const tbs = children(der, certificate)[0]
  if (!tbs) throw new Error('no tbsCertificate')
  // [3] EXPLICIT Extensions: SEQUENCE OF Extension (extnID, critical DEFAULT FALSE, extnValue).
  const wrapper = children(der, tbs).find((t) => t.tag === 0xa3)
  const out: CertificateExtensions = {}
  if (!wrapper) return out
  const list = children(der, wrapper)[0]
  if (!list) return out
  for (const ext of children(der, list)) {
    const parts = children(der, ext)
    const oid = parts[0]
    const value = parts[parts.length - 1]
    if (!oid || !value || value.tag !== 0x04) continue
    if (hex(der, oid) === KEY_USAGE) out.keyUsage = keyUsage(der, value)
    if (hex(der, oid) === BASIC_CONSTRAINTS) out.basicConstraints = basicConstraints(der, value)
  }
  return out
}

/** KeyUsage ::= BIT STRING: bit 0 digitalSignature, bit 5 keyCertSign (first byte: unused bits). */
function keyUsage(der: Uint8Array, octets: Tlv) {
  const bits = readTlv(der, octets.start)
  const first = bits.end - bits.start > 1 ? (der[bits.start + 1] ?? 0) : 0
  return { digitalSignature: (first & 0x80) !== 0, keyCertSign: (first & 0x04) !== 0 }
}

/** BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }. */
function basicConstraints(der: Uint8Array, octets: Tlv) {
  const sequence = readTlv(der, octets.start)
  let ca = false
  let pathLength: number | undefined
  for (const field of children(der, sequence)) {
    if (field.tag === 0x01) ca = der[field.start] !== 0
    if (field.tag === 0x02) {
      pathLength = 0
      for (let i = field.start; i < field.end; i++) pathLength = pathLength * 256 + (der[i] ?? 0)
    }
  }
  return { ca, pathLength }
}
