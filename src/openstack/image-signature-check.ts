/**
 * What `[glance] verify_image_signatures`, `require_signed_images` and `trusted_ca_file` ask of an
 * image before its download: unsigned images pass unless signatures are required; a signed one
 * gets its certificate from Barbican, checked (dates, key usage, chain to trusted_ca_file, key
 * type), and a verifier that the download feeds and checks at its end (docs/fpga.md, "Signed
 * images"). Every check that needs no image bytes runs here, before the first byte is fetched.
 */
import type { X509Certificate } from 'node:crypto'
import { ConflictError, InvalidInputError } from '../domain/errors.js'
import type { BarbicanClient } from './barbican.js'
import { checkSigningCertificate, parseCertificate, verifyChain } from './certificate-chain.js'
import {
  createSignatureVerifier,
  parseSignatureProperties,
  signingKey,
  type ChunkVerifier,
  type SignatureProperties,
} from './image-signature.js'

export interface ImageSignatureOptions {
  /** `[glance] verify_image_signatures`: verify signed images. @default true */
  verify: boolean
  /** `[glance] require_signed_images`: refuse unsigned images (needs verify). @default false */
  require: boolean
  /** The certificates of `[glance] trusted_ca_file`, or undefined when it is unset. */
  trusted?: { file: string; certificates: readonly X509Certificate[] } | undefined
  /** Where certificates come from (`[barbican]`), or undefined when it is not configured. */
  barbican?: BarbicanClient | undefined
  /** @default () => new Date() */
  now?: () => Date
}

export interface ImageSignatureCheck {
  /**
   * Checks what can be checked of `image` before its download, and returns the verifier its data
   * must pass, or undefined when it is not to be verified (unsigned and allowed, or verification off).
   * @throws InvalidInputError IMAGE_UNSIGNED, SIGNATURE_PROPERTIES_INVALID, CERTIFICATE_* ;
   *   ConflictError NO_KEY_MANAGER (no [barbican]); UnavailableError KEY_MANAGER_UNAVAILABLE
   */
  prepare(image: { id: string; signature: SignatureProperties }): Promise<ChunkVerifier | undefined>
}

export function createImageSignatureCheck(options: ImageSignatureOptions): ImageSignatureCheck {
  const now = options.now ?? (() => new Date())
  return {
    async prepare(image) {
      if (!options.verify && !options.require) return undefined
      const sig = parseSignatureProperties(image.id, image.signature)
      if (!sig) {
        if (!options.require) return undefined
        throw new InvalidInputError(
          `image ${image.id} is not signed (it has no img_signature properties) and [glance] require_signed_images = true`,
          { code: 'IMAGE_UNSIGNED', details: { field: 'img_signature', image: image.id } },
        )
      }
      if (!options.trusted) {
        // An unanchored certificate proves only that somebody who can write to Barbican signed.
        throw new InvalidInputError(
          `image ${image.id} is signed, but [glance] trusted_ca_file is unset, so its signing ` +
            `certificate ${sig.certificateUuid} cannot be trusted: set it to the CA bundle that ` +
            `issues image signing certificates`,
          {
            code: 'CERTIFICATE_UNTRUSTED',
            details: { field: 'img_signature_certificate_uuid', image: image.id },
          },
        )
      }
      if (!options.barbican) {
        // A configuration no retry changes: a conflict naming the section (issue 27).
        throw new ConflictError(
          `image ${image.id} is signed, but this agent has no key manager to fetch its certificate ${sig.certificateUuid} from: configure [barbican]`,
          { code: 'NO_KEY_MANAGER', details: { option: '[barbican]' } },
        )
      }
      const payload = await options.barbican.getCertificate(sig.certificateUuid, image.id)
      const signing = {
        certificate: parseCertificate(payload, sig.certificateUuid, image.id),
        uuid: sig.certificateUuid,
        image: image.id,
      }
      const at = now()
      checkSigningCertificate(signing, at)
      verifyChain(signing, options.trusted.certificates, at, options.trusted.file)
      return createSignatureVerifier(sig, signingKey(signing.certificate, sig))
    },
  }
}
