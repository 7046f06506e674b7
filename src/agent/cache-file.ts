/**
 * One file of the agent's local cache (local-cache.ts): a header line
 * `cyborg-agent-cache 1 sha256=<hex of the body>` and a JSON body. Writes are atomic (a temp file
 * in the same directory, fsync, rename over the old file, fsync of the directory); a file that does
 * not parse, whose checksum does not match or whose content is not what was expected is moved aside
 * (`<name>.corrupt-<time>`) with a warning and read as missing.
 */
import { createHash, randomBytes } from 'node:crypto'
import type * as nodeFs from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../domain/logger.js'

/** The subset of node:fs/promises the cache uses; tests replace parts of it to simulate a crash. */
export type CacheFs = Pick<
  typeof nodeFs,
  'mkdir' | 'readdir' | 'readFile' | 'open' | 'rename' | 'unlink'
>

/** The cache directory and what its files are read and written with. */
export interface CacheDir {
  fs: CacheFs
  dir: string
  log: Logger
  /** ISO time now (names a corrupt file moved aside). */
  now(): string
}

const HEADER = /^cyborg-agent-cache 1 sha256=([0-9a-f]{64})$/

/** Serializes `body` with its checksum header. */
export function encodeCacheFile(body: unknown): string {
  const json = JSON.stringify(body)
  return `cyborg-agent-cache 1 sha256=${sha256(json)}\n${json}\n`
}

/** Parses a cache file. @throws Error when the header, the checksum or the JSON is wrong */
export function decodeCacheFile(text: string): unknown {
  const newline = text.indexOf('\n')
  const match = newline < 0 ? null : HEADER.exec(text.slice(0, newline))
  if (!match) throw new Error('missing or malformed header')
  const json = text.slice(newline + 1).replace(/\n$/, '')
  if (sha256(json) !== match[1]) throw new Error('checksum mismatch (torn or edited file)')
  return JSON.parse(json) as unknown
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

async function fsyncDir({ fs, dir }: CacheDir): Promise<void> {
  const handle = await fs.open(dir, 'r')
  try {
    await handle.sync()
  } catch (err) {
    // Some file systems cannot fsync a directory; the rename is still atomic there.
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM') throw err
  } finally {
    await handle.close()
  }
}

/** Replaces the file `name` with `body`, atomically. */
export async function writeAtomic(cache: CacheDir, name: string, body: unknown): Promise<void> {
  const { fs, dir } = cache
  const target = path.join(dir, name)
  const tmp = path.join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const handle = await fs.open(tmp, 'wx', 0o640)
  try {
    await handle.writeFile(encodeCacheFile(body), 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await fs.rename(tmp, target)
  } catch (err) {
    await fs.unlink(tmp).catch(() => {})
    throw err
  }
  await fsyncDir(cache)
}

/** The body of the file `name` when `valid`; undefined when missing, or corrupt (then moved aside). */
export async function readChecked<T>(
  cache: CacheDir,
  name: string,
  valid: (body: unknown) => body is T,
): Promise<T | undefined> {
  const { fs, log } = cache
  const file = path.join(cache.dir, name)
  let text: string
  try {
    text = await fs.readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  try {
    const body = decodeCacheFile(text)
    if (!valid(body)) throw new Error('unexpected content')
    return body
  } catch (err) {
    const aside = `${file}.corrupt-${cache.now().replace(/[:.]/g, '-')}`
    await fs.rename(file, aside)
    log.warn(
      { file, movedTo: aside, reason: (err as Error).message },
      'agent cache file is corrupt; moved aside, starting without it',
    )
    return undefined
  }
}

/** Creates the directory (mode 0750) if needed and deletes the temp files an interrupted write left. */
export async function openCacheDir({ fs, dir, log }: CacheDir): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o750 })
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith('.') && name.endsWith('.tmp')) {
      await fs.unlink(path.join(dir, name)).catch(() => {})
      log.debug({ file: name }, 'removed a temp file left by an interrupted write')
    }
  }
}
