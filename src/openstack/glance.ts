/**
 * The Glance client of FPGA programming: find a bitstream image by id, or by its `accel:function_id`
 * property (exactly one active image must carry it), and download it to a file while hashing it.
 * The file is kept only when its hash matches the one Glance recorded at upload
 * (`os_hash_algo` / `os_hash_value`: sha512 by default, sha256 if Glance is so configured) and,
 * when a verifier is given, the image's signature matches (image-signature.ts): the verifier sees
 * every chunk as it streams to the file, and is checked at the end, before the file is kept.
 */
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { InvalidInputError, NotFoundError, UnavailableError } from '../domain/errors.js'
import { causeMessage } from '../domain/error-message.js'
import { AnswerTooLargeError } from './answer-limit.js'
import { requestJson, resolveTarget, type RequestAuth, type ServiceEndpoint } from './http.js'
import {
  SIGNATURE_PROPERTIES,
  type ChunkVerifier,
  type SignatureProperties,
} from './image-signature.js'

export interface GlanceSettings {
  endpoint: string
  token?: string
  /** `password`: Keystone tokens, and the catalog's `image` endpoint unless endpoint_override is set. */
  auth?: RequestAuth
  timeoutMs: number
}

export interface ImageRef {
  /** `accel:bitstream_id`: the Glance image id. */
  imageId?: string
  /** `accel:function_id`: the image whose property `accel:function_id` has this value. */
  functionId?: string
}

/** An active image with a recorded hash, as `resolve` finds it. */
export interface ResolvedImage {
  id: string
  hashAlgo: string
  hashValue: string
  size: number
  /** Its img_signature* properties (absent ones undefined): see image-signature.ts. */
  signature: SignatureProperties
}

export interface GlanceClient {
  /** The image `ref` names. @throws NotFoundError, InvalidInputError (ambiguous or both given) */
  resolve(ref: ImageRef): Promise<ResolvedImage>
  /**
   * Downloads image `id` to `dest`, feeding every chunk to `verifier` too. A hash mismatch, or a
   * signature `verifier.verify()` refuses, deletes the file and throws InvalidInputError.
   * Bounded by `size` (when known, more is refused), and by times: no data for `timeoutMs`, or
   * not complete within 10 × `timeoutMs`, throws UnavailableError and deletes the file.
   */
  download(
    image: { id: string; hashAlgo: string; hashValue: string; size?: number },
    dest: string,
    verifier?: ChunkVerifier,
  ): Promise<void>
}

type RawImage = {
  id: string
  status: string
  os_hash_algo?: string | null
  os_hash_value?: string | null
  size?: number | null
} & SignatureProperties

export function createGlanceClient(settings: GlanceSettings): GlanceClient {
  const headers: Record<string, string> =
    settings.token === undefined ? {} : { 'x-auth-token': settings.token }
  const ep: ServiceEndpoint = {
    service: 'Glance',
    url: settings.endpoint.replace(/\/+$/, ''),
    headers,
    timeoutMs: settings.timeoutMs,
    auth: settings.auth,
  }
  const usable = (raw: RawImage) => {
    if (raw.status !== 'active')
      throw new InvalidInputError(`image ${raw.id} is ${raw.status}, not active`, {
        details: { field: 'image' },
      })
    if (!raw.os_hash_algo || !raw.os_hash_value) {
      throw new InvalidInputError(
        `image ${raw.id} has no recorded hash (os_hash_value): it cannot be verified`,
        { details: { field: 'image' } },
      )
    }
    return {
      id: raw.id,
      hashAlgo: raw.os_hash_algo,
      hashValue: raw.os_hash_value,
      size: raw.size ?? 0,
      signature: Object.fromEntries(
        SIGNATURE_PROPERTIES.filter((p) => typeof raw[p] === 'string').map((p) => [p, raw[p]]),
      ),
    }
  }
  return {
    async resolve(ref) {
      if ((ref.imageId === undefined) === (ref.functionId === undefined)) {
        throw new InvalidInputError(
          'name exactly one of accel:bitstream_id and accel:function_id',
          { details: { field: 'accel:bitstream_id' } },
        )
      }
      if (ref.imageId !== undefined) {
        const raw = await requestJson(
          ep,
          'GET',
          `/v2/images/${encodeURIComponent(ref.imageId)}`,
        ).catch((err: unknown) => {
          if ((err as { status?: number }).status === 404)
            throw new NotFoundError(`Glance has no image ${ref.imageId}`, {
              code: 'IMAGE_NOT_FOUND',
            })
          throw err
        })
        return usable(raw.body as RawImage)
      }
      const query = new URLSearchParams({ 'accel:function_id': ref.functionId!, status: 'active' })
      const { body } = await requestJson(ep, 'GET', `/v2/images?${query}`)
      const images = (body as { images: RawImage[] }).images
      if (images.length !== 1) {
        throw new InvalidInputError(
          `expected exactly 1 active image with accel:function_id ${ref.functionId}, found ${images.length}`,
          {
            details: { field: 'accel:function_id' },
          },
        )
      }
      return usable(images[0]!)
    },
    async download(image, dest, verifier) {
      const path = `/v2/images/${image.id}/file`
      const limits = downloadLimits(settings.timeoutMs, image.size)
      const fail = (err: unknown) =>
        new UnavailableError(`Glance GET ${path}: ${limits.failure(err)}`, { cause: err })
      const hash = createHash(image.hashAlgo)
      const tap = new Transform({
        transform(chunk: Buffer, _enc, done) {
          const over = limits.received(chunk.length)
          if (over) return done(over)
          hash.update(chunk)
          verifier?.update(chunk)
          done(null, chunk)
        },
      })
      try {
        // resolve() just ran with the same token, so a 401 here is not retried.
        const target = await resolveTarget(ep)
        const res = await fetch(`${target.url}${path}`, {
          headers: target.headers,
          signal: limits.signal,
        }).catch((err: unknown) => {
          throw fail(err)
        })
        if (!res.ok || !res.body) {
          await res.body?.cancel()
          throw new UnavailableError(`Glance GET ${path} answered ${res.status}`)
        }
        const file = createWriteStream(dest, { mode: 0o600 })
        await pipeline(Readable.fromWeb(res.body as never), tap, file).catch(
          async (err: unknown) => {
            // The file may still be opening when the pipeline fails: removed before its open, it would
            // be created after. Wait until the stream has closed (opened, then closed), then remove it.
            if (!file.closed) await once(file, 'close')
            await rm(dest, { force: true })
            throw fail(err)
          },
        )
      } finally {
        limits.done()
      }
      const got = hash.digest('hex')
      if (got !== image.hashValue) {
        await rm(dest, { force: true })
        throw new InvalidInputError(
          `image ${image.id} failed verification: its ${image.hashAlgo} is ${got.slice(0, 16)}…, Glance recorded ${image.hashValue.slice(0, 16)}…`,
          { code: 'IMAGE_HASH_MISMATCH', details: { field: 'image', image: image.id } },
        )
      }
      try {
        verifier?.verify()
      } catch (err) {
        await rm(dest, { force: true })
        throw err
      }
    },
  }
}

/**
 * The bounds of one image download (docs/auth-outbound.md, Limits): at most `size` bytes (the
 * image's declared size; 0 when unknown: no size bound), no pause longer than `timeoutMs`, and
 * done within 10 × `timeoutMs`. `signal` aborts the fetch when a time runs out.
 */
function downloadLimits(timeoutMs: number, size = 0) {
  const overallMs = timeoutMs * 10
  const overall = AbortSignal.timeout(overallMs)
  const idle = new AbortController()
  const idleTimer = setTimeout(() => idle.abort(), timeoutMs)
  let total = 0
  return {
    signal: AbortSignal.any([overall, idle.signal]),
    /** Counts a chunk, and restarts the idle time: the error to stop with, if it is one too many. */
    received(bytes: number): Error | undefined {
      total += bytes
      idleTimer.refresh()
      return size > 0 && total > size ? new AnswerTooLargeError(size) : undefined
    },
    failure(err: unknown): string {
      if (err instanceof AnswerTooLargeError)
        return `the image is more than its declared size of ${size} bytes: the rest was not read, and the connection was closed`
      if (idle.signal.aborted) return `no data for ${timeoutMs} ms`
      if (overall.aborted) return `the image was not complete within ${overallMs / 1000} s`
      return causeMessage(err)
    },
    done: () => clearTimeout(idleTimer),
  }
}
