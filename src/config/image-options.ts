/**
 * `[glance]` and `[barbican]`: where FPGA bitstreams come from, and how their signatures are
 * verified (docs/fpga.md, "Signed images"). Sections of the one option table in schema.ts, kept
 * here for that file's size.
 */
import { bool, int, optionalPath } from './options.js'

/** keystoneauth-style options of `[glance]` (from schema.ts) plus its download and signature options. */
export function glanceOptions<C extends object>(client: C) {
  return {
    ...client,
    timeout: int({
      default: 30,
      min: 1,
      help: 'Seconds to wait for one Glance answer (downloads get ten times as long).',
    }),
    verify_image_signatures: bool({
      default: true,
      help:
        'Verify the signature of a signed image (properties img_signature, ' +
        'img_signature_hash_method, img_signature_key_type, img_signature_certificate_uuid, as ' +
        'cursive and Nova read them) while it downloads, before it is programmed: the certificate ' +
        'comes from Barbican ([barbican]) and must chain to trusted_ca_file. Unsigned images are ' +
        'programmed unless require_signed_images = true. false: signatures are ignored.',
    }),
    require_signed_images: bool({
      default: false,
      help: 'Refuse to program an image that carries no signature. Needs verify_image_signatures = true, trusted_ca_file and [barbican].',
    }),
    trusted_ca_file: optionalPath({
      help:
        'PEM bundle of the CA certificates (roots, and any intermediates) that issue image ' +
        'signing certificates: a signing certificate must chain to a self-signed certificate in ' +
        'it. Read when the agent starts. Unset: every signed image is refused (a certificate that ' +
        'chains to nothing proves nothing), while unsigned ones are still programmed unless ' +
        'require_signed_images = true.',
    }),
  }
}

/** `[barbican]`: the key manager that holds image signing certificates, keystoneauth-style. */
export function barbicanOptions<C extends object>(client: C) {
  return {
    ...client,
    timeout: int({ default: 30, min: 1, help: 'Seconds to wait for one Barbican answer.' }),
  }
}
