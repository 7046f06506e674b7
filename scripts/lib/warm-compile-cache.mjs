/* global console, process */
// Warms Node's compile cache (V8 code cache) in dist/.cache for scripts/build.mjs, so that even the
// first start after `npm ci` skips compiling the bundle's chunks (docs/build.md, "The compile
// cache"). Best effort: a chunk that fails to load here is reported and left to compile at start.
//
//   node scripts/lib/warm-compile-cache.mjs <dist/main> <cache folder>
// Imports each chunk but the entry points (they act on load: cli.js parses its arguments), then
// runs `cli.js version` for cli.js and the chunks it loads statically.
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { enableCompileCache, flushCompileCache } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [main, cache] = process.argv.slice(2)
const ENTRIES = new Set(['cli.js', 'custody-verify-worker.js'])

if (process.env.CYBORG_WARMING !== '1') {
  // The parent: the cache must be on before the first chunk is compiled, so a child does the work.
  const env = { ...process.env, CYBORG_WARMING: '1', NODE_COMPILE_CACHE: cache }
  execFileSync(process.execPath, [process.argv[1], main, cache], { env, stdio: 'inherit' })
  execFileSync(process.execPath, [path.join(main, 'cli.js'), 'version'], { env, stdio: 'ignore' })
} else {
  enableCompileCache(cache)
  for (const name of readdirSync(main)) {
    if (!name.endsWith('.js') || ENTRIES.has(name)) continue
    try {
      await import(pathToFileURL(path.join(main, name)).href)
    } catch (err) {
      console.error(
        `compile cache: ${name} not warmed: ${err instanceof Error ? err.message : err}`,
      )
    }
  }
  flushCompileCache()
  // A chunk may have started a timer on load; nothing here needs to finish.
  process.exit(0)
}
