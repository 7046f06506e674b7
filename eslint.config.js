// Lint: typescript-eslint with type-aware async rules, plus the layering of docs/ARCHITECTURE.md.
// A service importing another service, a layer importing upward, or an import cycle (type-only imports
// included) fails `npm run lint`.
import path from 'node:path'
import ts from 'typescript'
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { importX } from 'eslint-plugin-import-x'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'

const layers = [
  'domain',
  'config',
  'db',
  'bus',
  'rpc',
  'drivers',
  'agent',
  'conductor',
  'openstack',
  'policy',
  'api',
  'cli',
  'main',
]

/** What each src/ folder may import (besides itself). `main` may import anything. */
const allowed = {
  domain: [],
  config: ['domain'],
  db: ['domain'],
  bus: ['domain'],
  drivers: ['domain'],
  openstack: ['domain', 'config'],
  rpc: ['domain', 'bus'],
  agent: ['domain', 'config', 'bus', 'rpc', 'drivers'],
  conductor: ['domain', 'config', 'bus', 'rpc', 'db', 'openstack'],
  policy: ['domain'],
  api: ['domain', 'config', 'bus', 'rpc', 'db', 'openstack', 'policy'],
  cli: ['domain'],
}

const zones = Object.entries(allowed).flatMap(([target, ok]) =>
  layers
    .filter((from) => from !== target && !ok.includes(from))
    .map((from) => ({
      target: `./src/${target}`,
      from: `./src/${from}`,
      message: `src/${target} may import only ${ok.length ? ok.join(', ') : 'nothing in src/'} (docs/ARCHITECTURE.md).`,
    })),
)

/** Each outside library has one home. */
const homes = [
  { names: ['kysely', 'pg', 'mysql2', 'mysql2/promise', 'better-sqlite3'], home: 'src/db' },
  { names: ['fastify'], home: 'src/api' },
  { names: ['amqplib'], home: 'src/bus' },
  { names: ['yaml'], home: 'src/policy' },
]

/**
 * An import edge of one file, as the TypeScript program sees it: static imports and re-exports,
 * `import x = require()`, dynamic `import()`, and `import('…')` types. `typeOnly` is import-x's
 * test: `import type`/`export type`, or named bindings that are all `type`.
 */
function moduleReference(node) {
  const allTypes = (named) => named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause
    const named = clause?.namedBindings
    const typeOnly =
      clause?.isTypeOnly || (!clause?.name && named && ts.isNamedImports(named) && allTypes(named))
    return { literal: node.moduleSpecifier, typeOnly: Boolean(typeOnly) }
  }
  if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
    const named = node.exportClause
    const typeOnly = node.isTypeOnly || (named && ts.isNamedExports(named) && allTypes(named))
    return { literal: node.moduleSpecifier, typeOnly: Boolean(typeOnly) }
  }
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    return { literal: node.moduleReference.expression, typeOnly: node.isTypeOnly }
  }
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
    return { literal: node.argument.literal, typeOnly: true }
  }
  if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
    return { literal: node.arguments[0], typeOnly: false }
  }
  return undefined
}

/** Per TypeScript program: its files' import edges, read on first use, and a resolution cache. */
const graphs = new WeakMap()

function graphOf(program) {
  let graph = graphs.get(program)
  if (!graph) {
    const options = program.getCompilerOptions()
    const cache = ts.createModuleResolutionCache(program.getCurrentDirectory(), (f) => f, options)
    graph = { edges: new Map(), options, cache }
    graphs.set(program, graph)
  }
  return graph
}

/** The imports of `fileName` that resolve to files of the program (not to node_modules). */
function importsOf(program, fileName) {
  const graph = graphOf(program)
  const known = graph.edges.get(fileName)
  if (known) return known
  const edges = []
  graph.edges.set(fileName, edges)
  const file = program.getSourceFile(fileName)
  const visit = (node) => {
    const ref = moduleReference(node)
    if (ref?.literal && ts.isStringLiteralLike(ref.literal)) {
      const mode = program.getModeForUsageLocation(file, ref.literal)
      const { resolvedModule: found } = ts.resolveModuleName(
        ref.literal.text,
        fileName,
        graph.options,
        ts.sys,
        graph.cache,
        undefined,
        mode,
      )
      const inProject = found && !found.isExternalLibraryImport
      const target = inProject && program.getSourceFile(found.resolvedFileName)
      if (target) edges.push({ target: target.fileName, typeOnly: ref.typeOnly, node })
    }
    ts.forEachChild(node, visit)
  }
  if (file) visit(file)
  return edges
}

/** The shortest import path from `from` to `to` (both included), or undefined. */
function importPath(program, from, to) {
  const parent = new Map([[from, null]])
  for (const queue = [from]; queue.length > 0;) {
    const file = queue.shift()
    if (file === to) {
      const route = []
      for (let at = to; at != null; at = parent.get(at)) route.unshift(at)
      return route
    }
    for (const { target } of importsOf(program, file)) {
      if (parent.has(target)) continue
      parent.set(target, file)
      queue.push(target)
    }
  }
  return undefined
}

/**
 * import-x/no-cycle skips type-only imports and has no option to count them. This rule reports
 * the cycles it misses: a type-only import whose target leads back to this file through imports
 * of any kind. Cycles made of value imports only are left to import-x/no-cycle.
 */
const noTypeImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid import cycles that pass through a type-only import.' },
    messages: {
      cycle:
        'Import cycle through a type-only import: {{route}}. Put the shared types in a leaf file.',
    },
    schema: [],
  },
  create(context) {
    const services = context.sourceCode.parserServices
    const program = services?.program
    const self = program?.getSourceFile(context.physicalFilename)?.fileName
    if (!self) return {}
    return {
      Program() {
        for (const { target, typeOnly, node } of importsOf(program, self)) {
          const route = typeOnly && target !== self && importPath(program, target, self)
          if (!route) continue
          const names = [self, ...route].map((f) => path.relative(context.cwd, f))
          const at = services.tsNodeToESTreeNodeMap.get(node)
          context.report({
            ...(at ? { node: at } : { loc: { line: 1, column: 0 } }),
            messageId: 'cycle',
            data: { route: names.join(' → ') },
          })
        }
      },
    }
  },
}

/**
 * src/api reads the database through src/db/reads/ only (the read models; docs/ARCHITECTURE.md):
 * any other src/db path is a repository that writes, or the write path itself.
 */
const API_DB_IMPORT = String.raw`(^|/)db/(?!reads/)`
/**
 * What a module of src/db/reads/ may import from the rest of src/db (its specifiers start `../`):
 * the connection, the error map, the JSON memo, precompiled statements, pagination and the table
 * types. Never a repository that writes; those import the reads, not the other way round.
 */
const READS_DB_IMPORT = String.raw`^\.\./(?!\.\./|core/(connection|errors|json-memo|precompiled|pagination|schema)\.js$)`

/**
 * What `folder` may not import: each outside library outside its home; in src/api, any of src/db
 * but src/db/reads/ (the API only reads; writes go through the conductor); in src/db/reads, any
 * writing module of src/db, except in its tests; in src/agent, any driver module but the port
 * (driver.ts), except in its tests.
 */
function restrictedImports(folder, { tests = false } = {}) {
  const paths = homes
    .filter(({ home }) => !`src/${folder}/`.startsWith(`${home}/`))
    .flatMap(({ names, home }) =>
      names.map((name) => ({ name, message: `${name} is used only in ${home}/.` })),
    )
  const patterns = []
  if (folder === 'api') {
    patterns.push({
      regex: API_DB_IMPORT,
      message:
        'src/api imports only src/db/reads/ (the read models): a write goes through the conductor (docs/ARCHITECTURE.md).',
    })
  }
  if (folder === 'db/reads' && !tests) {
    patterns.push({
      regex: READS_DB_IMPORT,
      message:
        'src/db/reads/ stays free of writes: it imports only other reads and core/{connection,errors,json-memo,precompiled,pagination,schema}.',
    })
  }
  if (folder === 'agent' && !tests) {
    patterns.push({
      group: ['**/drivers/*', '!**/drivers/driver.js'],
      message:
        'src/agent depends on the driver port (src/drivers/driver.ts) only; src/main passes the drivers in.',
    })
  }
  return patterns.length > 0 ? { paths, patterns } : { paths }
}

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.cyborg/', 'src/drivers/__fixtures__/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: {
      'import-x': importX,
      cyborg: { rules: { 'no-type-import-cycle': noTypeImportCycle } },
    },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/test/it return promises that the runner itself awaits.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'test', 'it', 'suite', 'before', 'after'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'import-x/no-cycle': 'error',
      'cyborg/no-type-import-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // Node's modules, then packages, then the project's own files (issue 29).
      'import-x/order': [
        'error',
        { groups: ['builtin', 'external', ['internal', 'parent', 'sibling', 'index']] },
      ],
      // No file over 400 lines (docs/ARCHITECTURE.md, "Layers").
      'max-lines': ['error', { max: 400 }],
    },
  },
  ...Object.keys(allowed).map((folder) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', restrictedImports(folder)] },
  })),
  // The read models import no write of src/db; their tests do, to set rows up.
  {
    files: ['src/db/reads/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', restrictedImports('db/reads')] },
  },
  {
    files: ['src/db/reads/**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', restrictedImports('db/reads', { tests: true })] },
  },
  // Tests of the agent build it with real drivers over fixtures.
  {
    files: ['src/agent/**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', restrictedImports('agent', { tests: true })] },
  },
  // The dashboard's browser code (web/) talks to the API over HTTP only: nothing of src/.
  {
    files: ['web/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: String.raw`(^|/)src/`,
              message:
                'web/ imports nothing from src/: it reads the API over HTTP (docs/ARCHITECTURE.md).',
            },
          ],
        },
      ],
    },
  },
  // One home for the error-message idiom: src/domain/error-message.ts (errorMessage, rawErrorMessage).
  {
    files: ['**/*.ts'],
    ignores: ['src/domain/error-message.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "ConditionalExpression[test.operator='instanceof'][test.right.name='Error'][consequent.property.name='message']",
          message:
            'Use errorMessage(err) (one line) or rawErrorMessage(err) (as thrown) from src/domain/error-message.ts.',
        },
        {
          selector:
            "LogicalExpression[left.type='MemberExpression'][left.property.name='message'][right.callee.name='String']",
          message: 'Use errorMessage(err) from src/domain/error-message.ts.',
        },
      ],
    },
  },
  // No function over 150 lines outside the tests (issue 29): a big closure is cut into module
  // functions over a deps object (src/conductor/arq/arq-release.ts is the house example).
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js'],
    ignores: ['**/*.test.ts', '**/*.case.ts', 'test/**'],
    rules: { 'max-lines-per-function': ['error', { max: 150 }] },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
)
