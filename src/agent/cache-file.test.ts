/**
 * One agent cache file (cache-file.ts) in a real temp directory: what is written reads back; a torn
 * or edited file, or one of the wrong shape, is moved aside and read as missing; a missing file is
 * missing; opening deletes the temp files an interrupted write left and nothing else.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import * as fs from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { noopLogger } from '../domain/logger.js'
import { openCacheDir, readChecked, writeAtomic, type CacheDir } from './cache-file.js'

const isList = (v: unknown): v is { list: number[] } =>
  typeof v === 'object' && v !== null && Array.isArray((v as { list?: unknown }).list)

async function withDir(fn: (cache: CacheDir) => Promise<void>) {
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'cyborg-cache-file-'))
  try {
    await fn({
      fs,
      dir: path.join(dir, 'agent-h1'),
      log: noopLogger,
      now: () => '2026-01-02T03:04:05.678Z',
    })
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
}

describe('agent cache file', () => {
  it('writes atomically and reads back; a missing file reads as undefined', async () => {
    await withDir(async (cache) => {
      await openCacheDir(cache)
      assert.equal(await readChecked(cache, 'a.json', isList), undefined)
      await writeAtomic(cache, 'a.json', { list: [1, 2] })
      await writeAtomic(cache, 'a.json', { list: [3] })
      assert.deepEqual(await readChecked(cache, 'a.json', isList), { list: [3] })
      assert.deepEqual(await fs.readdir(cache.dir), ['a.json'])
    })
  })

  it('a torn file or one of the wrong shape is moved aside and read as missing', async () => {
    await withDir(async (cache) => {
      await openCacheDir(cache)
      await writeAtomic(cache, 'a.json', { list: [1] })
      const file = path.join(cache.dir, 'a.json')
      await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replace('[1]', '[2]'))
      assert.equal(await readChecked(cache, 'a.json', isList), undefined)
      await writeAtomic(cache, 'b.json', { other: true })
      assert.equal(await readChecked(cache, 'b.json', isList), undefined)
      assert.deepEqual((await fs.readdir(cache.dir)).sort(), [
        'a.json.corrupt-2026-01-02T03-04-05-678Z',
        'b.json.corrupt-2026-01-02T03-04-05-678Z',
      ])
    })
  })

  it('opening creates the directory and deletes only leftover temp files', async () => {
    await withDir(async (cache) => {
      await openCacheDir(cache)
      await fs.writeFile(path.join(cache.dir, '.a.json.123.abcd.tmp'), 'torn')
      await fs.writeFile(path.join(cache.dir, 'keep.json'), 'x')
      await openCacheDir(cache)
      assert.deepEqual(await fs.readdir(cache.dir), ['keep.json'])
    })
  })
})
