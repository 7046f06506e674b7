"""Verifies one signed image the way OpenStack's cursive does (Debian's python3-cursive), for
test/glance/signed-images.test.ts: the same key type, hash method, signature and certificate
checks as cursive.signature_utils.get_verifier, with the certificate read from a file instead of
a key manager, then, when a trusted bundle is given, cursive.certificate_utils'
CertificateVerificationContext over it (what nova's certificate validation runs).

usage: /usr/bin/python3 cursive-verify.py DATA SIGNATURE_B64 CERT_PEM KEY_TYPE HASH [BUNDLE_PEM]
prints one JSON line: {"ok": true} or {"ok": false, "error": "..."}
"""
import json
import sys

from cryptography import x509
from cursive import certificate_utils, signature_utils


def load_bundle(path):
    with open(path, 'rb') as f:
        text = f.read()
    marker = b'-----END CERTIFICATE-----'
    parts = [p + marker for p in text.split(marker) if b'-----BEGIN' in p]
    return [('trusted-%d' % i, x509.load_pem_x509_certificate(p)) for i, p in enumerate(parts)]


def main(data_path, signature, cert_path, key_type, hash_name, bundle=None):
    with open(cert_path, 'rb') as f:
        certificate = x509.load_pem_x509_certificate(f.read())
    if bundle:
        context = certificate_utils.CertificateVerificationContext(load_bundle(bundle))
        context.update(certificate)
        context.verify()
    key_type_obj = signature_utils.SignatureKeyType.lookup(key_type)
    public_key = certificate.public_key()
    if not isinstance(public_key, key_type_obj.public_key_type):
        raise ValueError('Invalid public key type for signature key type: %s' % key_type)
    verifier = key_type_obj.create_verifier(
        signature_utils.get_signature(signature),
        signature_utils.get_hash_method(hash_name),
        public_key,
    )
    if verifier is None:
        raise ValueError('Error occurred while creating the verifier')
    with open(data_path, 'rb') as f:
        for chunk in iter(lambda: f.read(65536), b''):
            verifier.update(chunk)
    verifier.verify()


if __name__ == '__main__':
    try:
        main(*sys.argv[1:])
        print(json.dumps({'ok': True}))
    except Exception as err:  # every failure is an answer, with its class for the test's message
        print(json.dumps({'ok': False, 'error': '%s: %s' % (type(err).__name__, err)}))
