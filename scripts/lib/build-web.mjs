/* global console, process */
// The dashboard's browser bundle (docs/dashboard.md): web/main.ts with Preact and htm, minified
// into dist/web/app.js, its gzip twin app.js.gz (what src/api/dashboard/ serves to a browser that
// accepts gzip) and app.css, the style sheets the modules import (web/style.css and each page's). It prints the compressed size and fails past the
// budget of issue 32: a first load under 150 KB of JavaScript, compressed.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

export const WEB_BUDGET_BYTES = 150 * 1024

/** Writes `bytes` to `file` through a temporary name, so a reader never sees half of it. */
function put(file, bytes) {
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, bytes)
  renameSync(temp, file)
}

export async function buildWeb(root, out) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['web/main.ts'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    outdir: out,
    entryNames: 'app',
    write: false,
    logLevel: 'error',
  })
  const output = (ext) => result.outputFiles.find((f) => f.path.endsWith(ext)).contents
  const js = output('.js')
  const gz = gzipSync(js, { level: 9 })
  mkdirSync(out, { recursive: true })
  put(path.join(out, 'app.js'), js)
  put(path.join(out, 'app.js.gz'), gz)
  put(path.join(out, 'app.css'), output('.css'))
  console.error(
    `dist/web/app.js: ${js.length} bytes, ${gz.length} gzipped (budget ${WEB_BUDGET_BYTES})`,
  )
  if (gz.length >= WEB_BUDGET_BYTES) throw new Error(`dist/web/app.js is over its budget`)
  return { bytes: js.length, gzipped: gz.length }
}
