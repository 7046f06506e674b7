/**
 * Arbitrary input for every route of the API (issue 27), driven by its own OpenAPI documents: a
 * body shaped like the route's schema with one value made hostile, JSON nested far past the limit,
 * impossible times, malformed URLs and huge values, in bodies, query parameters and path
 * parameters. Seeds: fixed in CI, any by hand (`FUZZ_SEED`, `FUZZ_RUNS`).
 */
import fc from 'fast-check'

/** fast-check parameters: a fixed seed unless FUZZ_SEED names one; the seed is printed on failure. */
export function fuzzParameters(defaultRuns: number, defaultSeed = 27): fc.Parameters<unknown> {
  const seed = process.env.FUZZ_SEED
  const runs = process.env.FUZZ_RUNS
  return {
    seed: seed === undefined || seed === '' ? defaultSeed : Number(seed),
    numRuns: runs === undefined || runs === '' ? defaultRuns : Number(runs),
  }
}

/** Strings that broke, or could break, a parser: impossible times, malformed URLs, huge and odd text. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '2026-13-45',
  '9999-99-99T99:99:99',
  '2026-01-01T::::',
  '2026-02-30T10:00:00Z',
  '0000-00-00',
  '-1',
  '0',
  '1e309',
  '99999999999999999999999',
  'NaN',
  'http:///127.0.0.1:17798/x',
  'http:///x',
  'http://h:0/x',
  'http://h/x#',
  'http://u:p@h/',
  'HTTP://H:80/a b',
  'javascript:alert(1)',
  'file:///etc/passwd',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\ud800',
  '\u202e',
  "'; drop table devices; --",
  '{"a":',
  'x'.repeat(70_000),
  '9'.repeat(400),
]

/** A JSON value that is hostile: those strings, extreme numbers, big and deep containers. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      -1,
      0,
      -0,
      1.5,
      2 ** 31,
      2 ** 53 + 1,
      1e308,
      -1e308,
      null,
      true,
      [],
      {},
    ),
  },
  { weight: 1, arbitrary: fc.array(fc.constant('x'), { minLength: 1000, maxLength: 3000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 30, max: 40 }).map((n) => nestedValue(n)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
)

/** `{"a":{"a":…}}` of `levels` objects (an array at every other level when `mixed`). */
export function nestedValue(levels: number, mixed = false): unknown {
  let v: unknown = {}
  for (let i = 1; i < levels; i++) v = mixed && i % 2 === 1 ? [v] : { a: v }
  return v
}

/** JSON text nested `levels` deep without building the value (10,000 levels fit in 60 KB). */
export function nestedText(levels: number, kind: 'object' | 'array' | 'mixed'): string {
  const open = kind === 'object' ? '{"a":' : kind === 'array' ? '[' : '{"a":['
  const close = kind === 'object' ? '}' : kind === 'array' ? ']' : ']}'
  const n = kind === 'mixed' ? Math.ceil(levels / 2) : levels
  return open.repeat(n) + '0' + close.repeat(n)
}

type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  additionalProperties?: boolean | Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  enum?: unknown[]
  format?: string
  minItems?: number
  minProperties?: number
}

/** A value the schema accepts, or near enough: every property, one item, one extra key where free. */
export function sampleOf(schema: Schema | undefined, known: Record<string, string> = {}): unknown {
  if (schema === undefined) return {}
  if (schema.enum !== undefined) return schema.enum[0]
  const alt = schema.anyOf ?? schema.oneOf
  if (alt !== undefined) return sampleOf(alt[0], known)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [k, s] of Object.entries(schema.properties ?? {})) out[k] = sampleOf(s, known)
      if (typeof schema.additionalProperties === 'object')
        out[known.key ?? 'x'] = sampleOf(schema.additionalProperties, known)
      return out
    }
    case 'array':
      return [sampleOf(schema.items, known)]
    case 'integer':
    case 'number':
      return 1
    case 'boolean':
      return true
    case 'null':
      return null
    case undefined:
    default:
      return schema.format === 'uuid' ? (known.uuid ?? '00000000-0000-4000-8000-000000000001') : 'x'
  }
}

/**
 * Values of the schema with fewer properties, so that a hostile value at one place is not hidden
 * by a refusal elsewhere: the full sample, then for each object the required properties plus one
 * optional one (in each of its own variants), at most `max` in all.
 */
export function variantsOf(
  schema: Schema | undefined,
  known: Record<string, string> = {},
  max = 24,
): unknown[] {
  const out: unknown[] = [sampleOf(schema, known)]
  const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type
  if (schema === undefined) return out
  if (type === 'array') {
    for (const v of variantsOf(schema.items, known, max).slice(1)) out.push([v])
  } else if (type === 'object' && schema.properties !== undefined) {
    const required = new Set(schema.required ?? [])
    const base: Record<string, unknown> = {}
    for (const k of required) base[k] = sampleOf(schema.properties[k], known)
    out.push(base)
    for (const [k, s] of Object.entries(schema.properties))
      for (const v of variantsOf(s, known, max)) out.push({ ...base, [k]: v })
  }
  const seen = new Set<string>()
  return out
    .filter((v) => {
      const key = JSON.stringify(v)
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    .slice(0, max)
}

/** Every path to a value inside `v` (`[]` is the whole), arrays and objects alike. */
function pathsOf(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(at)
  if (Array.isArray(v)) v.forEach((item, i) => pathsOf(item, [...at, i], out))
  else if (v !== null && typeof v === 'object')
    for (const [k, item] of Object.entries(v)) pathsOf(item, [...at, k], out)
  return out
}

/** `v` with the value at `path` replaced (a deep copy). */
function replaced(v: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value
  const copy = (Array.isArray(v) ? [...v] : { ...(v as object) }) as Record<
    string | number,
    unknown
  >
  copy[path[0]!] = replaced(copy[path[0]!], path.slice(1), value)
  return copy
}

const HOLE_TEXT = 'fuzz-hole-7c1e'
const HOLE = JSON.stringify(HOLE_TEXT)

/**
 * `sample` as JSON text with `text` (raw JSON, e.g. 10,000 levels of nesting that JSON.stringify
 * could not build) at every place of it, the whole included: one body per place.
 */
export function withTextAtEveryPlace(sample: unknown, text: string): string[] {
  return pathsOf(sample).map((path) =>
    JSON.stringify(replaced(sample, path, HOLE_TEXT)).replace(HOLE, text),
  )
}

/** Request bodies for a route whose body looks like `sample`: mutated, deep, or not JSON at all. */
export function bodyTexts(sample: unknown): fc.Arbitrary<string> {
  const paths = pathsOf(sample)
  const mutated = fc
    .tuple(fc.constantFrom(...paths), hostileValue)
    .map(([path, value]) => JSON.stringify(replaced(sample, path, value)))
  const deep = fc
    .tuple(
      fc.constantFrom(...paths),
      fc.integer({ min: 33, max: 8000 }),
      fc.constantFrom<'object' | 'array' | 'mixed'>('object', 'array', 'mixed'),
    )
    .map(([path, levels, kind]) =>
      JSON.stringify(replaced(sample, path, HOLE_TEXT)).replace(HOLE, nestedText(levels, kind)),
    )
  return fc.oneof(
    { weight: 8, arbitrary: mutated },
    { weight: 2, arbitrary: deep },
    { weight: 1, arbitrary: fc.constant(JSON.stringify(sample)) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof(fc.integer({ min: 33, max: 40 }), fc.integer({ min: 1000, max: 10_000 })),
          fc.constantFrom<'object' | 'array' | 'mixed'>('object', 'array', 'mixed'),
        )
        .map(([levels, kind]) => nestedText(levels, kind)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'null',
        '"x"',
        '[]',
        '{}',
        '{"__proto__":{"x":1}}',
        '{"a":',
        '\u0000',
        '1e999999',
      ),
    },
    { weight: 1, arbitrary: fc.json({ maxDepth: 4 }) },
  )
}

/** Query strings over the route's parameter names (plus one unknown), with hostile values. */
export function queryStrings(
  names: readonly string[],
  known: readonly string[],
): fc.Arbitrary<string> {
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 2, arbitrary: fc.constantFrom(...known, '1', 'asc', 'id', 'true') },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  )
  return fc
    .array(fc.tuple(fc.constantFrom(...names, 'x'), value), { maxLength: 4 })
    .map((pairs) => {
      const q = new URLSearchParams()
      for (const [k, v] of pairs) q.append(k, v.length > 4000 ? v.slice(0, 4000) : v)
      const text = q.toString()
      return text === '' ? '' : `?${text}`
    })
}

/** A path parameter: known values first, then hostile ones (encoded, some far too long). */
export function pathValues(known: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...known) },
    { weight: 1, arbitrary: fc.uuid() },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(...HOSTILE_STRINGS.filter((s) => s !== '' && s.length < 1000))
        .map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '\ufffd'))),
    },
  )
}
