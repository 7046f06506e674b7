/**
 * A throwaway PKI made with the openssl command line, the way an operator makes one (docs/fpga.md):
 * CAs (self-signed or under another CA, with a path length), signing certificates with chosen key
 * types and validity dates (`openssl ca -startdate/-enddate`, so that expired and not-yet-valid
 * ones are real), and image signatures made with `openssl dgst -sign`, as Glance's docs say.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Key kinds: RSA 2048/3072, DSA 2048, or an EC curve by OpenSSL name. */
export type KeySpec = 'rsa' | 'rsa3072' | 'dsa' | `ec:${string}`

export interface Cert {
  name: string
  /** Private key, PEM (PKCS#8). */
  keyPath: string
  /** Certificate, PEM. */
  certPath: string
  pem: string
  key: KeySpec
}

export interface CertOptions {
  /** @default 'rsa' for CAs too */
  key?: KeySpec
  /** `openssl ca` date, YYYYMMDDHHMMSSZ. @default an hour ago */
  notBefore?: string
  /** @default 30 days from now */
  notAfter?: string
  /** keyUsage value. @default 'critical, digitalSignature' (leaf), 'critical, keyCertSign, cRLSign' (CA) */
  keyUsage?: string
  /** CA only: pathlen of basicConstraints; 'none' leaves it out. @default 1 */
  pathLength?: number | 'none'
}

export interface Pki {
  dir: string
  /** A CA: self-signed without `issuer`. */
  ca(name: string, issuer?: Cert, options?: CertOptions): Promise<Cert>
  /** A signing certificate (end entity) issued by `issuer`. */
  leaf(name: string, issuer: Cert, options?: CertOptions): Promise<Cert>
  /**
   * Signs the file `data` with `cert`'s key: RSA-PSS (MGF1 of the same hash, salt as long as the
   * key allows, what cursive verifies), or DSA/ECDSA. `saltLength` overrides the PSS salt.
   * @returns the signature, base64 (the img_signature property)
   */
  sign(data: string, cert: Cert, hash?: string, saltLength?: string): Promise<string>
  /** A file of PEM certificates, for [glance] trusted_ca_file. */
  bundle(name: string, certs: Cert[]): Promise<string>
  cleanup(): Promise<void>
}

/** A date for `openssl ca`: now plus `seconds`. */
export function opensslDate(seconds: number): string {
  return `${new Date(Date.now() + seconds * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`
}

const CONFIG = `[ca]
default_ca = ca_default
[ca_default]
dir = .
database = index.txt
new_certs_dir = issued
serial = serial
default_md = sha256
policy = any
unique_subject = no
email_in_dn = no
copy_extensions = none
[any]
commonName = supplied
organizationName = optional
`

export async function createPki(): Promise<Pki> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-pki-'))
  await mkdir(path.join(dir, 'issued'))
  await writeFile(path.join(dir, 'ca.cnf'), CONFIG)
  await writeFile(path.join(dir, 'index.txt'), '')
  await writeFile(path.join(dir, 'serial'), '1000\n')
  const openssl = (args: string[]) => run('openssl', args, { cwd: dir })
  let dsaParams: Promise<string> | undefined

  const makeKey = async (file: string, key: KeySpec) => {
    if (key === 'dsa') {
      dsaParams ??= openssl([
        'genpkey',
        '-genparam',
        '-algorithm',
        'DSA',
        '-pkeyopt',
        'dsa_paramgen_bits:2048',
        '-pkeyopt',
        'dsa_paramgen_q_bits:256',
        '-out',
        'dsa-params.pem',
      ]).then(() => 'dsa-params.pem')
      await openssl(['genpkey', '-paramfile', await dsaParams, '-out', file])
    } else if (key.startsWith('ec:')) {
      await openssl([
        'genpkey',
        '-algorithm',
        'EC',
        '-pkeyopt',
        `ec_paramgen_curve:${key.slice(3)}`,
        '-out',
        file,
      ])
    } else {
      const bits = key === 'rsa3072' ? '3072' : '2048'
      await openssl([
        'genpkey',
        '-algorithm',
        'RSA',
        '-pkeyopt',
        `rsa_keygen_bits:${bits}`,
        '-out',
        file,
      ])
    }
  }

  const issue = async (name: string, issuer: Cert | undefined, isCa: boolean, o: CertOptions) => {
    const key = o.key ?? 'rsa'
    const base = name.replace(/[^A-Za-z0-9_-]/g, '_')
    const keyPath = path.join(dir, `${base}.key`)
    const certPath = path.join(dir, `${base}.pem`)
    await makeKey(keyPath, key)
    await openssl(['req', '-new', '-key', keyPath, '-subj', `/CN=${name}`, '-out', `${base}.csr`])
    const pathLength = o.pathLength ?? 1
    const ext = isCa
      ? [
          `basicConstraints = critical, CA:true${pathLength === 'none' ? '' : `, pathlen:${pathLength}`}`,
          `keyUsage = ${o.keyUsage ?? 'critical, keyCertSign, cRLSign'}`,
        ]
      : [
          'basicConstraints = critical, CA:false',
          `keyUsage = ${o.keyUsage ?? 'critical, digitalSignature'}`,
        ]
    ext.push('subjectKeyIdentifier = hash')
    if (issuer) ext.push('authorityKeyIdentifier = keyid')
    await writeFile(path.join(dir, `${base}.ext`), `[ext]\n${ext.join('\n')}\n`)
    await openssl([
      'ca',
      '-batch',
      '-notext',
      '-config',
      'ca.cnf',
      '-in',
      `${base}.csr`,
      '-out',
      certPath,
      '-extfile',
      `${base}.ext`,
      '-extensions',
      'ext',
      '-startdate',
      o.notBefore ?? opensslDate(-3600),
      '-enddate',
      o.notAfter ?? opensslDate(30 * 86400),
      ...(issuer
        ? ['-cert', issuer.certPath, '-keyfile', issuer.keyPath]
        : ['-selfsign', '-keyfile', keyPath]),
    ])
    return { name, keyPath, certPath, pem: await readFile(certPath, 'utf8'), key }
  }

  return {
    dir,
    ca: (name, issuer, options = {}) => issue(name, issuer, true, options),
    leaf: (name, issuer, options = {}) => issue(name, issuer, false, options),
    async sign(data, cert, hash = 'sha256', saltLength = 'max') {
      const out = path.join(dir, `sig-${Math.random().toString(36).slice(2)}.bin`)
      const pss = cert.key.startsWith('rsa')
        ? ['-sigopt', 'rsa_padding_mode:pss', '-sigopt', `rsa_pss_saltlen:${saltLength}`]
        : []
      await openssl(['dgst', `-${hash}`, '-sign', cert.keyPath, ...pss, '-out', out, data])
      return (await readFile(out)).toString('base64')
    },
    async bundle(name, certs) {
      const file = path.join(dir, name)
      await writeFile(file, certs.map((c) => c.pem).join(''))
      return file
    },
    async cleanup() {
      await rm(dir, { recursive: true, force: true })
    },
  }
}
