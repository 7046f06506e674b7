// An esbuild plugin for scripts/build.mjs. Node's ES-module face of node:http and node:https reads
// every export once, and three of them (WebSocket, CloseEvent, MessageEvent) are getters that load
// undici, HTTP/2 and TLS: 60-100 ms of start-up for nothing. In the bundle, an `import` of either
// becomes a require() of the CommonJS module, which reads an export only when it is used.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const NAMES = /^node:(http|https)$/

/** The module's exports that are plain values (not getters), as `export const` lines. */
function reexports(specifier) {
  const m = require(specifier)
  const names = Object.keys(m).filter((k) => {
    const d = Object.getOwnPropertyDescriptor(m, k)
    return d && !d.get && /^[A-Za-z_$][\w$]*$/.test(k)
  })
  return [
    `const m = require(${JSON.stringify(specifier)})`,
    'export default m',
    ...names.map((k) => `export const ${k} = m.${k}`),
  ].join('\n')
}

export const builtinsAsRequire = {
  name: 'builtins-as-require',
  setup(build) {
    build.onResolve({ filter: NAMES }, (args) =>
      args.kind === 'import-statement' || args.kind === 'dynamic-import'
        ? { path: args.path, namespace: 'builtin-require' }
        : undefined,
    )
    build.onLoad({ filter: /.*/, namespace: 'builtin-require' }, (args) => ({
      contents: reexports(args.path),
      loader: 'js',
      resolveDir: '.',
    }))
  },
}
