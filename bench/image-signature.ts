/**
 * What signature verification adds to an FPGA image download (docs/fpga.md, "Signed images"),
 * printed as JSON. A 64 MiB image is served by a local HTTP server in a worker thread (Glance's
 * `GET /v2/images/{id}/file`), and the agent's Glance client downloads it to a file while hashing
 * it with sha512 (Glance's default os_hash_algo): without a verifier, with an RSA-PSS SHA-256
 * verifier (3072-bit key), and with an ECDSA P-384 SHA-384 one, interleaved, several rounds.
 * Figures are medians of wall time and of this process's CPU time. The goal: verification adds at
 * most 25 % to download-and-hash time.
 *
 * Usage: npm run bench:image-signature [-- --mib 64 --rounds 7]
 */
import { constants, createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { Worker } from 'node:worker_threads'
import { createGlanceClient } from '../src/openstack/glance.js'
import {
  createSignatureVerifier,
  maxPssSaltLength,
  type HashMethod,
  type ImageSignature,
  type KeyType,
} from '../src/openstack/image-signature.js'
import { eventLoopLag, machineFacts } from './support/load.js'

const { values: args } = parseArgs({
  options: { mib: { type: 'string', default: '64' }, rounds: { type: 'string', default: '7' } },
})
const MIB = Number(args.mib)
const ROUNDS = Number(args.rounds)
const loadAtStart = loadavg()[0]!

// The image: deterministic bytes (not all zeros), served from memory by a worker thread, so that
// serving does not share this thread with the download.
const image = Buffer.alloc(MIB * 1024 * 1024)
for (let i = 0; i < image.length; i += 4) image.writeUInt32LE((i * 2654435761) >>> 0, i)
const SERVER = `
const { createServer } = require('node:http')
const { workerData, parentPort } = require('node:worker_threads')
const image = Buffer.from(workerData)
const server = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': image.length })
  res.end(image)
})
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
`
const shared = new Uint8Array(new SharedArrayBuffer(image.length))
shared.set(image)
const worker = new Worker(SERVER, { eval: true, workerData: shared })
const port = await new Promise<number>((resolve) => worker.once('message', resolve))

const glance = createGlanceClient({ endpoint: `http://127.0.0.1:${port}`, timeoutMs: 60_000 })
const hashValue = createHash('sha512').update(image).digest('hex')
const meta = { id: 'bench-image', hashAlgo: 'sha512', hashValue }
const lag = eventLoopLag()

interface Variant {
  name: string
  signature?: { sig: ImageSignature; key: KeyObject }
}

function signed(name: string, keyType: KeyType, hashMethod: HashMethod): Variant {
  const digest = hashMethod.replace('SHA-', 'sha')
  const pair =
    keyType === 'RSA-PSS'
      ? generateKeyPairSync('rsa', { modulusLength: 3072 })
      : generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
  const signature =
    keyType === 'RSA-PSS'
      ? sign(digest, image, {
          key: pair.privateKey,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: maxPssSaltLength(pair.publicKey, hashMethod),
        })
      : sign(digest, image, pair.privateKey)
  const sig = { image: meta.id, signature, hashMethod, keyType, certificateUuid: 'bench' }
  return { name, signature: { sig, key: pair.publicKey } }
}

const variants: Variant[] = [
  { name: 'hashOnly' },
  signed('rsaPssSha256', 'RSA-PSS', 'SHA-256'),
  signed('eccP384Sha384', 'ECC_SECP384R1', 'SHA-384'),
]
const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-image-'))
const dest = path.join(dir, 'image.gbs')

async function once(v: Variant): Promise<{ wallMs: number; cpuMs: number }> {
  const verifier = v.signature && createSignatureVerifier(v.signature.sig, v.signature.key)
  const cpu = process.cpuUsage()
  const started = performance.now()
  await glance.download(meta, dest, verifier)
  const wallMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  await rm(dest, { force: true })
  return { wallMs, cpuMs: (used.user + used.system) / 1000 }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return Math.round(s[Math.floor(s.length / 2)]! * 10) / 10
}

// One warm-up round, not counted (V8, the page cache, the server's first response).
for (const v of variants) await once(v)
const runs = new Map<string, { wallMs: number; cpuMs: number }[]>(variants.map((v) => [v.name, []]))
for (let r = 0; r < ROUNDS; r++) {
  for (const v of variants) runs.get(v.name)!.push(await once(v))
}
await rm(dir, { recursive: true, force: true })
await worker.terminate()

const figures = Object.fromEntries(
  [...runs].map(([name, xs]) => [
    name,
    { wallMs: median(xs.map((x) => x.wallMs)), cpuMs: median(xs.map((x) => x.cpuMs)) },
  ]),
)
const base = figures.hashOnly as { wallMs: number; cpuMs: number }
const overhead = Object.fromEntries(
  Object.entries(figures)
    .filter(([name]) => name !== 'hashOnly')
    .map(([name, f]) => [
      name,
      {
        wall: Math.round((f.wallMs / base.wallMs - 1) * 1000) / 1000,
        cpu: Math.round((f.cpuMs / base.cpuMs - 1) * 1000) / 1000,
      },
    ]),
)
console.log(
  JSON.stringify(
    {
      benchmark: 'image-signature',
      imageMiB: MIB,
      rounds: ROUNDS,
      glanceHash: 'sha512',
      medians: figures,
      overhead,
      goal: 'verification adds at most 0.25 to download-and-hash wall time',
      goalMet: Object.values(overhead).every((o) => o.wall <= 0.25),
      machine: machineFacts(loadAtStart),
      eventLoopLag: {
        benchmarkProcess: lag(),
        services:
          'the download and verification run in the benchmark process; the Glance stand-in in a worker thread',
      },
    },
    null,
    2,
  ),
)
