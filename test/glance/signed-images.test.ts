/**
 * Signed FPGA images, end to end: real Keystone, real Glance, real Barbican (certificates stored as
 * `certificate` secrets), an openssl-made PKI, and images signed with `openssl dgst -sign`, bound
 * through the conductor so that the agent fetches, verifies and programs them (model:
 * fpga-bind.test.ts). The agent's image source is built from configuration ([glance] options,
 * [barbican] with Keystone password auth), as `cyborg agent` builds it. Every refusal is a
 * BindFailed whose reason names it, and the card keeps the image it had. Debian's python3-cursive
 * checks the same signatures: what we accept it accepts, what we refuse it refuses.
 *
 * Glance verifies signatures itself when data is uploaded with the properties already set (with
 * the uploader's token, against Barbican); this Glance runs without Keystone, so the properties are
 * added after the upload. What the agent reads is the same.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID, X509Certificate } from 'node:crypto'
import { access, mkdtemp, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { loadConfig } from '../../src/config/config.js'
import type { ImageSource } from '../../src/agent/fpga-images.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { glanceImages, imageSignatureCheck } from '../../src/main/resources.js'
import { createGlanceClient } from '../../src/openstack/glance.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { barbicanSkip, startBarbican, type RunningBarbican } from '../support/peers/barbican.js'
import { glanceSkip, startGlance, type RunningGlance } from '../support/peers/glance.js'
import {
  ADMIN_PASSWORD,
  keystoneSkip,
  startKeystone,
  type RunningKeystone,
} from '../support/peers/keystone.js'
import { createPki, opensslDate, type Cert, type Pki } from '../support/peers/pki.js'
import { ROOT } from '../support/service.js'

const run = promisify(execFile)
const skip = (await keystoneSkip()) ?? (await glanceSkip()) ?? (await barbicanSkip())

/** One image as uploaded: its bytes (on disk, for cursive), signature, and certificate. */
interface Signed {
  data: string
  signature: string
  cert: Cert
  keyType: string
  hash: string
}

void describe('signed FPGA images, verified against Barbican certificates', { skip }, () => {
  let keystone: RunningKeystone
  let glance: RunningGlance
  let barbican: RunningBarbican
  let pki: Pki
  let db: TestDatabase
  let core: Core
  let bundle: string
  let source: ImageSource
  const sources: Record<'relaxed' | 'strict', ImageSource | undefined> = {
    relaxed: undefined,
    strict: undefined,
  }
  const images: Record<string, string> = {}
  const signed: Record<string, Signed> = {}
  let n = 0

  const config = (strict: boolean) =>
    loadConfig({
      files: [],
      hostname: 'fpga-1',
      env: {
        CYBORG_GLANCE__ENDPOINT_OVERRIDE: glance.url,
        CYBORG_GLANCE__TRUSTED_CA_FILE: bundle,
        CYBORG_GLANCE__REQUIRE_SIGNED_IMAGES: String(strict),
        CYBORG_BARBICAN__AUTH_TYPE: 'password',
        CYBORG_BARBICAN__AUTH_URL: keystone.url,
        CYBORG_BARBICAN__ENDPOINT_OVERRIDE: barbican.url,
        CYBORG_BARBICAN__USERNAME: 'admin',
        CYBORG_BARBICAN__PASSWORD: ADMIN_PASSWORD,
        CYBORG_BARBICAN__PROJECT_NAME: 'admin',
      },
    })
  /** Writes `bytes` to a file and uploads them to Glance, then adds `props`. */
  const upload = async (bytes: Buffer, props: Record<string, string> = {}) => {
    const id = await glance.upload(bytes)
    if (Object.keys(props).length > 0) {
      const res = await fetch(`${glance.url}/v2/images/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/openstack-images-v2.1-json-patch' },
        body: JSON.stringify(
          Object.entries(props).map(([k, value]) => ({ op: 'add', path: `/${k}`, value })),
        ),
      })
      if (res.status !== 200) throw new Error(`image patch: ${res.status} ${await res.text()}`)
    }
    return id
  }
  const bytesFile = async (text: string) => {
    const file = path.join(pki.dir, `image-${++n}.bin`)
    // Some size, so that the download comes in several chunks.
    await writeFile(file, Buffer.concat([Buffer.from(text), Buffer.alloc(700_000, text)]))
    return file
  }
  const sign = async (
    text: string,
    cert: Cert,
    keyType: string,
    hash = 'sha256',
  ): Promise<Signed> => {
    const data = await bytesFile(text)
    return { data, signature: await pki.sign(data, cert, hash), cert, keyType, hash }
  }
  const props = (s: Signed, certUuid: string) => ({
    img_signature: s.signature,
    img_signature_hash_method: `SHA-${s.hash.slice(3)}`,
    img_signature_key_type: s.keyType,
    img_signature_certificate_uuid: certUuid,
  })
  const cursive = async (s: Signed, data = s.data) => {
    const args = [
      path.join(ROOT, 'test/support/peers/cursive-verify.py'),
      data,
      s.signature,
      s.cert.certPath,
      s.keyType,
      `SHA-${s.hash.slice(3)}`,
      bundle,
    ]
    const { stdout } = await run('/usr/bin/python3', args, { timeout: 60_000 })
    return JSON.parse(stdout) as { ok: boolean; error?: string }
  }

  before(async () => {
    ;[keystone, glance, pki] = await Promise.all([startKeystone(), startGlance(), createPki()])
    barbican = await startBarbican(keystone)
    const root = await pki.ca('Image Root CA', undefined, { key: 'ec:P-384' })
    const intermediate = await pki.ca('Image Intermediate CA', root, { pathLength: 0 })
    const stranger = await pki.ca('Somebody Else CA')
    bundle = await pki.bundle('trusted.pem', [root, intermediate])
    const rsa = await pki.leaf('RSA image signer', root)
    const ecc = await pki.leaf('ECC image signer', intermediate, { key: 'ec:P-521' })
    const expired = await pki.leaf('Expired signer', root, {
      notBefore: opensslDate(-10 * 86400),
      notAfter: opensslDate(-86400),
    })
    const outsider = await pki.leaf('Outsider signer', stranger)
    const certs = {
      rsa: await barbican.storeCertificate(rsa.pem),
      // Stored as DER octets, as Glance's docs upload it.
      ecc: await barbican.storeCertificate(ecc.pem, { der: new X509Certificate(ecc.pem).raw }),
      expired: await barbican.storeCertificate(expired.pem),
      outsider: await barbican.storeCertificate(outsider.pem),
    }
    signed.rsa = await sign('bitstream: rsa-signed gzip v1', rsa, 'RSA-PSS')
    signed.ecc = await sign('bitstream: ecc-signed crc v1', ecc, 'ECC_SECP521R1', 'sha384')
    signed.expired = await sign('bitstream: expired signer', expired, 'RSA-PSS')
    signed.outsider = await sign('bitstream: outsider', outsider, 'RSA-PSS')
    const tamperedData = await bytesFile('bitstream: rsa-signed gzip v1 with a backdoor')
    const file = (s: Signed | string) => (typeof s === 'string' ? s : s.data)
    const put = async (name: string, data: Signed | string, p: Record<string, string> = {}) => {
      images[name] = await upload(await readFile(file(data)), p)
    }
    await put('rsa', signed.rsa, props(signed.rsa, certs.rsa))
    await put('ecc', signed.ecc, props(signed.ecc, certs.ecc))
    await put('unsigned', await bytesFile('bitstream: unsigned v1'))
    await put('expired', signed.expired, props(signed.expired, certs.expired))
    await put('outsider', signed.outsider, props(signed.outsider, certs.outsider))
    await put('unknownCert', signed.rsa, props(signed.rsa, randomUUID()))
    await put(
      'opaqueSecret',
      signed.rsa,
      props(signed.rsa, await barbican.storeOpaque(Buffer.from('x'))),
    )
    // Glance's hash is right for these bytes; the signature is the genuine image's.
    await put('tampered', tamperedData, props(signed.rsa, certs.rsa))
    await put('mismatch', signed.rsa, {
      ...props(signed.rsa, certs.rsa),
      img_signature_key_type: 'ECC_SECP384R1',
    })
    const incomplete: Record<string, string> = props(signed.rsa, certs.rsa)
    delete incomplete.img_signature_key_type
    await put('incomplete', signed.rsa, incomplete)

    sources.relaxed = glanceImages(config(false))
    sources.strict = glanceImages(config(true))
    source = sources.relaxed!
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: 'fpga-1',
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
        images: { fetch: (ref, dest) => source.fetch(ref, dest) },
      },
    })
    await core.agent!.discoverNow()
    for (const name of Object.keys(images)) {
      await core.conductorClient.createDeviceProfile({
        name,
        description: null,
        groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': images[name]! }],
      })
    }
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await Promise.all([glance?.stop(), barbican?.stop(), pki?.cleanup()])
    await keystone?.stop()
  })

  let vm = 0
  const bind = async (profile: string, strict = false) => {
    source = strict ? sources.strict! : sources.relaxed!
    const [arq] = await core.conductorClient.createArqs({
      deviceProfileName: profile,
      projectId: null,
      maxArqs: 1,
    })
    const [out] = await core.conductorClient.bindArqs({
      bindings: {
        [arq!.uuid]: {
          hostname: 'fpga-1',
          instanceUuid: `5e9a0000-0000-4000-8000-${String(++vm).padStart(12, '0')}`,
        },
      },
    })
    return out!
  }
  const programmed = async () =>
    (await db.db.selectFrom('deployables').select('bitstream_id').executeTakeFirstOrThrow())
      .bitstream_id

  void it('programs an RSA-PSS signed image whose certificate chains to the trusted root', async () => {
    assert.equal((await bind('rsa')).state, 'Bound')
    assert.equal(await programmed(), images.rsa)
    assert.deepEqual(await cursive(signed.rsa!), { ok: true })
  })

  void it('programs an ECDSA P-521 signed image through an intermediate CA, its certificate stored as DER', async () => {
    assert.equal((await bind('ecc', true)).state, 'Bound')
    assert.equal(await programmed(), images.ecc)
    assert.deepEqual(await cursive(signed.ecc!), { ok: true })
  })

  void it('programs an unsigned image unless signatures are required', async () => {
    const strict = await bind('unsigned', true)
    assert.equal(strict.state, 'BindFailed')
    assert.match(
      strict.reason ?? '',
      new RegExp(`image ${images.unsigned} is not signed .*require_signed_images = true`),
    )
    assert.equal(await programmed(), images.ecc, 'the card keeps the image it had')
    assert.equal((await bind('unsigned')).state, 'Bound')
    assert.equal(await programmed(), images.unsigned)
  })

  const refused = async (profile: string, reason: RegExp) => {
    const before = await programmed()
    const out = await bind(profile)
    assert.equal(out.state, 'BindFailed', `${profile}: ${out.reason}`)
    assert.match(out.reason ?? '', reason)
    assert.equal(await programmed(), before, 'the card keeps the image it had')
  }

  void it('refuses data that does not match its signature; cursive refuses it too', async () => {
    await refused(
      'tampered',
      new RegExp(
        `image ${images.tampered} failed signature verification: its RSA-PSS SHA-256 signature does not match`,
      ),
    )
    const other = await bytesFile('bitstream: rsa-signed gzip v1 with a backdoor')
    assert.equal((await cursive(signed.rsa!, other)).ok, false)
    const eccOther = await bytesFile('bitstream: ecc-signed crc v2')
    assert.equal((await cursive(signed.ecc!, eccOther)).ok, false)
  })

  void it('refuses an unknown certificate, an expired one, and one from another CA', async () => {
    await refused(
      'unknownCert',
      /signing certificate [0-9a-f-]{36} of image .* is not in Barbican \(404\)/,
    )
    await refused(
      'expired',
      /signing certificate [0-9a-f-]{36} \(CN=Expired signer\) of image .* expired on 20/,
    )
    await refused(
      'outsider',
      /\(CN=Outsider signer\) of image .* is not trusted: no certificate in \[glance\] trusted_ca_file .* is its issuer \(CN=Somebody Else CA\)/,
    )
    assert.match((await cursive(signed.expired!)).error ?? '', /outside its valid date range/)
    assert.match((await cursive(signed.outsider!)).error ?? '', /Certificate chain building failed/)
  })

  void it('refuses a non-certificate secret, a key type mismatch, and incomplete properties', async () => {
    await refused('opaqueSecret', /is a Barbican secret of type opaque, not certificate/)
    await refused(
      'mismatch',
      /is signed with key type ECC_SECP384R1 but its certificate .* holds an RSA key/,
    )
    await refused(
      'incomplete',
      /has incomplete signature properties: img_signature_key_type is missing/,
    )
  })

  void it('deletes the downloaded file when the signature fails, before anyone can use it', async () => {
    const dir = await mkdtemp(path.join(pki.dir, 'dl-'))
    const dest = path.join(dir, 'image.gbs')
    const glanceClient = createGlanceClient({ endpoint: glance.url, timeoutMs: 10_000 })
    const image = await glanceClient.resolve({ imageId: images.tampered! })
    const verifier = await imageSignatureCheck(config(false)).prepare(image)
    assert.ok(verifier)
    await assert.rejects(glanceClient.download(image, dest, verifier), {
      code: 'SIGNATURE_INVALID',
    })
    await assert.rejects(access(dest), { code: 'ENOENT' })
  })

  void it('the program API refuses a tampered image with a 4xx reason, and programs a good one', async () => {
    // Every bound request goes; their units come back from their clean.
    const arqs = await db.db.selectFrom('accelerator_requests').select('uuid').execute()
    await core.conductorClient.deleteArqs({ uuids: arqs.map((a) => a.uuid) })
    await core.conductor!.cleaningIdle()
    const uuid = (await db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow())
      .uuid
    const program = (name: string) =>
      core.conductorClient.programDeployable({ uuid, imageUuid: images[name]!, userId: 'ops' })
    source = sources.relaxed!
    const before = await programmed()
    await assert.rejects(program('tampered'), (err: Error & { code?: string }) => {
      assert.equal(err.name, 'InvalidInputError')
      assert.equal(err.code, 'SIGNATURE_INVALID')
      assert.match(err.message, /failed signature verification/)
      return true
    })
    await assert.rejects(program('expired'), { code: 'CERTIFICATE_EXPIRED' })
    assert.equal(await programmed(), before, 'refused before the card: nothing changed')
    assert.equal((await program('rsa')).imageUuid, images.rsa)
    assert.equal(await programmed(), images.rsa)
  })
})
