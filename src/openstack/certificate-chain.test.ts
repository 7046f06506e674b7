/**
 * Signing certificate validation, as cursive's certificate_utils does it, over an openssl-made
 * PKI: validity dates, key usage, the chain to trusted_ca_file (roots and intermediates), path
 * length constraints; and the two extensions read from DER.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { createPki, opensslDate, type Cert, type Pki } from '../../test/support/peers/pki.js'
import {
  checkSigningCertificate,
  parseCaBundle,
  parseCertificate,
  verifyChain,
  type SigningCertificate,
} from './certificate-chain.js'
import { certificateExtensions } from './x509-extensions.js'

const x509 = (c: Cert) => new X509Certificate(c.pem)
const signing = (c: Cert): SigningCertificate => ({
  certificate: x509(c),
  uuid: 'cert-1',
  image: 'img',
})
const failure = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    return `${(err as { code?: string }).code}: ${(err as Error).message}`
  }
  return 'no error'
}

void describe('signing certificate validation', () => {
  let pki: Pki
  let root: Cert
  let intermediate: Cert
  let other: Cert
  const leaves: Record<string, Cert> = {}
  const now = () => new Date()
  const chain = (leaf: Cert, trusted: Cert[]) =>
    failure(() => verifyChain(signing(leaf), trusted.map(x509), now(), '/etc/cyborg/ca.pem'))

  before(async () => {
    pki = await createPki()
    root = await pki.ca('Root CA', undefined, { key: 'ec:P-384' })
    intermediate = await pki.ca('Intermediate CA', root, { pathLength: 0 })
    other = await pki.ca('Other CA')
    leaves.direct = await pki.leaf('direct signer', root)
    leaves.below = await pki.leaf('intermediate signer', intermediate, { key: 'ec:P-521' })
    leaves.stranger = await pki.leaf('stranger', other)
    leaves.expired = await pki.leaf('expired', root, {
      notBefore: opensslDate(-3 * 86400),
      notAfter: opensslDate(-86400),
    })
    leaves.future = await pki.leaf('future', root, { notBefore: opensslDate(86400) })
    leaves.noSign = await pki.leaf('encipher only', root, { keyUsage: 'critical, keyEncipherment' })
  })
  after(async () => pki?.cleanup())

  void it('reads key usage and basic constraints from DER', () => {
    assert.deepEqual(certificateExtensions(x509(intermediate).raw), {
      keyUsage: { digitalSignature: false, keyCertSign: true },
      basicConstraints: { ca: true, pathLength: 0 },
    })
    assert.deepEqual(certificateExtensions(x509(leaves.direct!).raw), {
      keyUsage: { digitalSignature: true, keyCertSign: false },
      basicConstraints: { ca: false, pathLength: undefined },
    })
  })

  void it('accepts a certificate within its dates that chains to a trusted root', () => {
    checkSigningCertificate(signing(leaves.direct!), now())
    assert.equal(chain(leaves.direct!, [root]), 'no error')
    assert.equal(chain(leaves.below!, [other, intermediate, root]), 'no error')
  })

  void it('refuses expired and not-yet-valid certificates, naming the date', () => {
    assert.match(
      failure(() => checkSigningCertificate(signing(leaves.expired!), now())),
      /^CERTIFICATE_EXPIRED: signing certificate cert-1 \(CN=expired\) of image img expired on 20\d\d-/,
    )
    assert.match(
      failure(() => checkSigningCertificate(signing(leaves.future!), now())),
      /^CERTIFICATE_NOT_YET_VALID: .* is not valid before 20\d\d-/,
    )
    // The clock decides: the same certificate was good yesterday.
    assert.equal(
      failure(() =>
        checkSigningCertificate(signing(leaves.expired!), new Date(Date.now() - 2 * 86400_000)),
      ),
      'no error',
    )
  })

  void it('refuses a signing certificate whose key usage leaves out digitalSignature', () => {
    assert.match(
      failure(() => checkSigningCertificate(signing(leaves.noSign!), now())),
      /^CERTIFICATE_INVALID: .* has a key usage without digitalSignature/,
    )
  })

  void it('refuses a certificate from another CA, naming its issuer', () => {
    assert.equal(
      chain(leaves.stranger!, [root, intermediate]),
      'CERTIFICATE_UNTRUSTED: signing certificate cert-1 (CN=stranger) of image img is not ' +
        'trusted: no certificate in [glance] trusted_ca_file (/etc/cyborg/ca.pem) is its issuer ' +
        '(CN=Other CA)',
    )
  })

  void it('needs the whole chain up to a self-signed certificate in the bundle', () => {
    assert.match(
      chain(leaves.below!, [intermediate]),
      /its chain stops at CN=Intermediate CA\): no certificate/,
    )
    assert.match(
      chain(leaves.below!, [root]),
      /^CERTIFICATE_UNTRUSTED: .*is its issuer \(CN=Intermediate CA\)/,
    )
  })

  void it('skips trusted certificates that are expired, not CAs, or may not sign certificates', async () => {
    const expiredRoot = await pki.ca('Expired Root', undefined, {
      notBefore: opensslDate(-3 * 86400),
      notAfter: opensslDate(-86400),
    })
    const notCa = await pki.leaf('Not A CA', root)
    const noCertSign = await pki.ca('No CertSign CA', undefined, { keyUsage: 'critical, cRLSign' })
    for (const [issuer, why] of [
      [expiredRoot, 'is outside its validity dates'],
      [notCa, 'is not a CA'],
      [noCertSign, 'may not sign certificates'],
    ] as const) {
      const leaf = await pki.leaf(`under ${issuer.name}`, issuer)
      assert.match(
        chain(leaf, [issuer]),
        new RegExp(`^CERTIFICATE_UNTRUSTED: .*CN=${issuer.name} in /etc/cyborg/ca.pem ${why}`),
      )
    }
  })

  void it('applies path length constraints; a CA without one allows any length', async () => {
    const tight = await pki.ca('Tight Root', undefined, { pathLength: 0 })
    const under = await pki.ca('Under Tight', tight)
    const leaf = await pki.leaf('deep signer', under)
    assert.match(
      chain(leaf, [tight, under]),
      /^CERTIFICATE_UNTRUSTED: .*CA CN=Tight Root allows 0 intermediate CA\(s\) below it, the chain has 1$/,
    )
    const open = await pki.ca('Open Root', undefined, { pathLength: 'none' })
    const mid = await pki.ca('Under Open', open, { pathLength: 'none' })
    assert.equal(chain(await pki.leaf('open signer', mid), [open, mid]), 'no error')
  })

  void it('parses PEM and DER payloads, and refuses anything else', () => {
    const pem = leaves.direct!.pem
    const der = x509(leaves.direct!).raw
    assert.equal(parseCertificate(Buffer.from(pem), 'u', 'i').subject, x509(leaves.direct!).subject)
    assert.equal(
      parseCertificate(der, 'u', 'i').fingerprint256,
      x509(leaves.direct!).fingerprint256,
    )
    assert.match(
      failure(() => parseCertificate(Buffer.from('not a certificate'), 'u', 'i')),
      /^CERTIFICATE_INVALID: signing certificate u of image i is not an X.509 certificate/,
    )
    assert.equal(parseCaBundle(root.pem + intermediate.pem).length, 2)
    assert.throws(() => parseCaBundle('nothing here'), /no PEM certificate/)
    assert.throws(
      () =>
        parseCaBundle(`${root.pem}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`),
      /certificate 2 does not parse/,
    )
  })
})
