// An esbuild plugin for scripts/build.mjs: a package that a bundled package requires at load but
// uses only on a path this program never takes stays out of the bundle, and is required from
// node_modules the first time one of its exports is read. prom-client requires @opentelemetry/api
// for exemplars (off here: no metric enables them): about 50 ms of every start evaluated it.
const LAZY = ['@opentelemetry/api']

/** A CommonJS stand-in whose properties load the real package when first read. */
function standIn(name) {
  return [
    'let real',
    `const load = () => (real ??= require(${JSON.stringify(name)}))`,
    'module.exports = new Proxy({}, {',
    '  get: (_, key) => load()[key],',
    '  has: (_, key) => key in load(),',
    '  ownKeys: () => Reflect.ownKeys(load()),',
    '  getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(load(), key),',
    '})',
  ].join('\n')
}

export const lazyPackages = {
  name: 'lazy-packages',
  setup(build) {
    const filter = new RegExp(`^(${LAZY.map((n) => n.replace(/[/.]/g, '\\$&')).join('|')})$`)
    build.onResolve({ filter }, (args) =>
      // The stand-in's own require() is left to Node at run time.
      args.namespace === 'lazy-package'
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'lazy-package' },
    )
    build.onLoad({ filter: /.*/, namespace: 'lazy-package' }, (args) => ({
      contents: standIn(args.path),
      loader: 'js',
    }))
  },
}
