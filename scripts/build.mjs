/* global console, process, URL */
// Builds dist/ for bin/cyborg (docs/build.md): src/main/cli.ts bundled by esbuild (the compiler tsx
// runs the tests with) with the packages it imports, split so that what a command loads lazily
// stays a chunk of its own. Every output lies in dist/main/, so a path a module in src/main/ builds
// from import.meta.url (version.ts, commands/custody-verify.ts beside its worker) holds from dist/ too. It checks no types
// (`npm run typecheck` does) and takes a few seconds.
//
//   node scripts/build.mjs             build, and remove outputs of earlier builds (npm run build;
//                                      npm ci's `prepare`)
//   node scripts/build.mjs --if-stale  build only when a file under src/ or the installed packages
//                                      changed since the last build (test/support/cli.ts runs it);
//                                      earlier outputs stay, as a running process may still load them
//
// Each output is written beside itself and renamed into place, so a process starting bin/cyborg
// while another builds reads either the old file or the new one, never half of one.
import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { builtinsAsRequire } from './lib/builtins-as-require.mjs'
import { buildWeb } from './lib/build-web.mjs'
import { lazyPackages } from './lib/lazy-package.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const dist = path.join(root, 'dist')
const stamp = path.join(dist, '.built')
/** What the build reads: the sources, and the packages npm installed (its record of them). */
const inputs = [
  path.join(root, 'src'),
  path.join(root, 'web'),
  path.join(root, 'node_modules/.package-lock.json'),
]

/** The newest modification time of `p` or anything below it (a folder changes when a file goes). */
function newest(p) {
  let s
  try {
    s = statSync(p)
  } catch {
    return -1
  }
  if (!s.isDirectory()) return s.mtimeMs
  const below = readdirSync(p).map((name) => newest(path.join(p, name)))
  return Math.max(s.mtimeMs, ...below)
}

const mtime = (p) => newest(p)
const ifStale = process.argv.includes('--if-stale')
if (ifStale && mtime(stamp) >= Math.max(...inputs.map(newest))) process.exit(0)

const started = Date.now()
const result = await build({
  absWorkingDir: root,
  // Flat names: the worker lands beside the chunks, where custody-verify.ts (its sibling in src/)
  // finds it from import.meta.url.
  entryPoints: {
    cli: 'src/main/cli.ts',
    'custody-verify-worker': 'src/main/commands/custody-verify-worker.ts',
  },
  outdir: 'dist/main',
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  // better-sqlite3 finds its native addon beside its own files: it stays in node_modules.
  external: ['better-sqlite3'],
  plugins: [builtinsAsRequire, lazyPackages],
  // The bundled CommonJS packages call require() for Node's modules.
  banner: {
    js: "import { createRequire as __cyborgRequire } from 'node:module'; const require = __cyborgRequire(import.meta.url);",
  },
  // Licence comments go to a `<chunk>.LEGAL.txt` beside each chunk, not the chunk's end: one
  // non-ASCII letter in one (light-my-request's) made Node decode the whole 1.1 MB http chunk
  // as a two-byte string, 1.1 MB more of the API's heap (docs/performance.md, "Footprint, fourth
  // pass (issue 28)").
  legalComments: 'external',
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  write: false,
  logLevel: 'error',
})
mkdirSync(path.join(dist, 'main'), { recursive: true })
const written = new Set()
for (const file of result.outputFiles) {
  const temp = `${file.path}.${process.pid}.tmp`
  writeFileSync(temp, file.contents)
  renameSync(temp, file.path)
  written.add(file.path)
}
if (!ifStale)
  for (const name of readdirSync(path.join(dist, 'main'))) {
    const file = path.join(dist, 'main', name)
    if (!written.has(file)) rmSync(file, { force: true })
  }
// Node's compile cache for bin/cyborg (docs/build.md, "The compile cache"): a full build starts it
// afresh (entries of chunks that are gone would only take space), then warms it.
const cache = path.join(dist, '.cache')
if (!ifStale) rmSync(cache, { recursive: true, force: true })
// The Node bin/cyborg runs (the cache is kept per Node version).
const node = path.join(root, 'node_modules/.bin/node')
try {
  execFileSync(
    statSync(node, { throwIfNoEntry: false }) ? node : process.execPath,
    [path.join(root, 'scripts/lib/warm-compile-cache.mjs'), path.join(dist, 'main'), cache],
    { stdio: ['ignore', 'inherit', 'inherit'], timeout: 60_000 },
  )
} catch (err) {
  console.error(`the compile cache was not warmed (each start compiles instead): ${err.message}`)
}
// The dashboard's browser bundle (web/ → dist/web/, docs/dashboard.md).
await buildWeb(root, path.join(dist, 'web'))
writeFileSync(stamp, `${new Date().toISOString()}\n`)
console.error(`built dist/ in ${Date.now() - started} ms`)
