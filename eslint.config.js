// Lint: typescript-eslint with type-aware async rules, plus the layering of docs/ARCHITECTURE.md.
// A service importing another service, a layer importing upward, or an import cycle fails `npm run lint`.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { importX } from 'eslint-plugin-import-x'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'

const layers = ['domain', 'config', 'db', 'bus', 'rpc', 'drivers', 'agent', 'conductor', 'openstack', 'policy', 'api', 'cli', 'main']

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

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.cyborg/', 'src/drivers/__fixtures__/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
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
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite', 'before', 'after'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  ...Object.keys(allowed).map((folder) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: homes
            .filter(({ home }) => home !== `src/${folder}`)
            .flatMap(({ names, home }) => names.map((name) => ({ name, message: `${name} is used only in ${home}/.` }))),
        },
      ],
    },
  })),
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
)
