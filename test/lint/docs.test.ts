/**
 * The docs keep up with the tree (issue 29):
 * - every folder under src/ that holds .ts files has a README.md naming each of its source files in
 *   backticks (`name.ts`); tests (`*.test.ts`) are left out, `*.case.ts` count (they are shared
 *   contract suites that other folders' tests import, so a reader must find them), fixture folders
 *   (`__fixtures__`) are skipped;
 * - every table of src/db/core/schema.ts is named in the data model of docs/ARCHITECTURE.md;
 * - every relative markdown link in README.md, docs/ and src/ READMEs resolves to a file, and so does
 *   every repository path they name in backticks (`src/db/core/schema.ts`; globs left out);
 * - no line of src/, test/, bench/ or scripts/ (.ts, .mjs, .js; fixtures excepted) is over 160
 *   characters;
 * - lint forbids the inline error-message idiom outside src/domain/error-message.ts.
 * Each check lists every offender at once.
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { ESLint } from 'eslint'
import { ROOT } from '../support/service.js'

const MAX_LINE = 160
const SKIPPED_DIRS = new Set(['__fixtures__', 'node_modules', '.git'])

/** Every folder under `dir` (itself included), fixture folders skipped. */
function folders(dir: string): string[] {
  const subs = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !SKIPPED_DIRS.has(e.name))
    .flatMap((e) => folders(path.join(dir, e.name)))
  return [dir, ...subs]
}

/** The files of `dir` (not recursive) whose names match `pattern`. */
function filesIn(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && pattern.test(e.name))
    .map((e) => e.name)
}

const rel = (file: string): string => path.relative(ROOT, file)

/** The source files a folder's README must name: .ts, tests excepted. */
function sourceFiles(names: string[]): string[] {
  return names.filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts')).sort()
}

/** The names of `files` that `readme` does not mention in backticks. */
function unnamed(readme: string, files: string[]): string[] {
  return files.filter((f) => !readme.includes('`' + f + '`'))
}

/** The table names of `interface Database { … }` in the schema's source. */
function schemaTables(schema: string): string[] {
  const body = /export interface Database \{([^}]*)\}/.exec(schema)?.[1]
  assert.ok(body, 'no `interface Database` in src/db/core/schema.ts')
  return [...body.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]!)
}

/** The text of the `## title` section of a markdown document (up to the next `## `). */
function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`)
  if (start < 0) return ''
  const end = markdown.indexOf('\n## ', start + 1)
  return markdown.slice(start, end < 0 ? undefined : end)
}

/** The relative link targets of a markdown text (no scheme, no pure anchor), anchors removed. */
function relativeLinks(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '')
  return [...withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'))
    .map((t) => t.split('#')[0]!)
}

/** The repository paths a markdown text names in backticks (`src/…/x.ts`), globs left out. */
function namedPaths(markdown: string): string[] {
  return [
    ...markdown.matchAll(/`((?:src|test|bench|scripts|docs)\/[^`\s*{]+\.(?:ts|mjs|js|md|json))`/g),
  ].map((m) => m[1]!)
}

/** `file:line (length)` for each line of `text` over the limit. */
function longLines(file: string, text: string, max = MAX_LINE): string[] {
  return text
    .split('\n')
    .map((line, i) => ({ n: i + 1, length: [...line].length }))
    .filter(({ length }) => length > max)
    .map(({ n, length }) => `${file}:${n} (${length})`)
}

describe('docs keep up with the tree', () => {
  test('the checks catch what they look for', () => {
    assert.deepEqual(sourceFiles(['a.ts', 'a.test.ts', 'b.case.ts', 'README.md']), [
      'a.ts',
      'b.case.ts',
    ])
    assert.deepEqual(unnamed('- `a.ts`: one\n- b.ts: two', ['a.ts', 'b.ts']), ['b.ts'])
    assert.deepEqual(unnamed('`xa.ts`', ['a.ts']), ['a.ts'])
    assert.deepEqual(schemaTables('export interface Database {\n  a: A\n  b_c: B\n}'), ['a', 'b_c'])
    assert.equal(section('# T\n\n## One\nx\n## Two\ny\n', 'One'), '\n## One\nx')
    assert.deepEqual(
      relativeLinks('[a](b.md#x) [c](https://d) [e](#f) `[g](h.md)` [i](../j/k.md "t")'),
      ['b.md', '../j/k.md'],
    )
    assert.deepEqual(namedPaths('`src/a/b.ts` `src/a/*.ts` `src/a` src/c.ts `test/d.md`'), [
      'src/a/b.ts',
      'test/d.md',
    ])
    assert.deepEqual(longLines('f.ts', `ok\n${'x'.repeat(161)}\n${'y'.repeat(160)}`), [
      'f.ts:2 (161)',
    ])
  })

  test('every source folder has a README naming each of its files', () => {
    const missing: string[] = []
    for (const dir of folders(path.join(ROOT, 'src'))) {
      const files = sourceFiles(filesIn(dir, /\.ts$/))
      if (files.length === 0) continue
      const readme = path.join(dir, 'README.md')
      if (!existsSync(readme)) {
        missing.push(`${rel(readme)} (missing)`)
        continue
      }
      const text = readFileSync(readme, 'utf8')
      missing.push(...unnamed(text, files).map((f) => `${rel(dir)}/${f}`))
    }
    assert.deepEqual(missing, [], `not named in their folder's README.md:\n${missing.join('\n')}`)
  })

  test("every table of the schema is in ARCHITECTURE.md's data model", () => {
    const tables = schemaTables(readFileSync(path.join(ROOT, 'src/db/core/schema.ts'), 'utf8'))
    assert.ok(tables.length > 0)
    const model = section(
      readFileSync(path.join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8'),
      'Data model',
    )
    assert.ok(model, 'docs/ARCHITECTURE.md has no "## Data model" section')
    const missing = tables.filter((t) => !model.includes('`' + t + '`'))
    assert.deepEqual(missing, [], `tables missing from the data model: ${missing.join(', ')}`)
  })

  test('every relative link of the docs and READMEs resolves', () => {
    const docs = filesIn(path.join(ROOT, 'docs'), /\.md$/).map((f) => path.join(ROOT, 'docs', f))
    const readmes = folders(path.join(ROOT, 'src'))
      .map((d) => path.join(d, 'README.md'))
      .filter((f) => existsSync(f))
    const broken: string[] = []
    for (const file of [path.join(ROOT, 'README.md'), ...docs, ...readmes]) {
      if (!existsSync(file)) continue
      for (const target of relativeLinks(readFileSync(file, 'utf8'))) {
        if (target !== '' && !existsSync(path.resolve(path.dirname(file), target)))
          broken.push(`${rel(file)} → ${target}`)
      }
      for (const named of namedPaths(readFileSync(file, 'utf8'))) {
        if (!existsSync(path.join(ROOT, named))) broken.push(`${rel(file)} → \`${named}\``)
      }
    }
    assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`)
  })

  test(`no line is over ${MAX_LINE} characters`, () => {
    const over: string[] = []
    for (const top of ['src', 'test', 'bench', 'scripts']) {
      if (!existsSync(path.join(ROOT, top))) continue
      for (const dir of folders(path.join(ROOT, top))) {
        for (const name of filesIn(dir, /\.(ts|mjs|js)$/)) {
          const file = path.join(dir, name)
          over.push(...longLines(rel(file), readFileSync(file, 'utf8')))
        }
      }
    }
    assert.deepEqual(over, [], `lines over ${MAX_LINE} characters:\n${over.join('\n')}`)
  })

  test('lint forbids the inline error-message idiom outside its home', async () => {
    const eslint = new ESLint({ cwd: ROOT })
    const code =
      'export const m = (err: unknown) => (err instanceof Error ? err.message : String(err))\n'
    const ids = async (file: string): Promise<string[]> => {
      const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) })
      return (result?.messages ?? []).map((m) => m.ruleId ?? m.message)
    }
    assert.ok((await ids('src/api/health-probe.ts')).includes('no-restricted-syntax'))
    const cast = 'export const m = (err: unknown) => (err as Error).message || String(err)\n'
    const [castResult] = await eslint.lintText(cast, {
      filePath: path.join(ROOT, 'src/api/health-probe.ts'),
    })
    assert.ok(castResult?.messages.some((m) => m.ruleId === 'no-restricted-syntax'))
    assert.ok(!(await ids('src/domain/error-message.ts')).includes('no-restricted-syntax'))
  })
})
