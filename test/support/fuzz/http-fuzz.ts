/**
 * Arbitrary HTTP/1.x traffic for the protocol fuzz (fast-check): methods, targets built from the
 * API's own route templates, content types (parameters, wrong case, duplicates), every body framing
 * (none, Content-Length right, zero, short, long, invalid; chunked right, empty, malformed,
 * unterminated; both at once), `Expect`, bodies on GET and DELETE, pipelining, and raw garbage.
 * Each case says whether the server must wait for more bytes (`incomplete`): those end with the
 * server's close (request_timeout), the others with one answer per request.
 */
import fc from 'fast-check'

export interface FuzzCase {
  bytes: Buffer
  /** The methods of the requests in `bytes`, in order (HEAD answers have no body). */
  methods: string[]
  /** The server cannot have the whole request(s): it has to time the client out or refuse. */
  incomplete: boolean
  /** Not HTTP at all, or framing the server must refuse: a 4xx and a close are both fine. */
  refused: boolean
}

/** Values to put in route parameters (`:uuid`, `:value`, `:name`), known ones first. */
export type ParamValues = Record<string, string[]>

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json; foo="bar"; q=0.5',
  'application/json, text/plain',
  'application/merge-patch+json',
  'application/openstack-patch+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  '',
  ';',
  'application/',
  '*/*',
]
const VERSIONS = [
  'accelerator 2.0',
  'accelerator 2.4',
  'accelerator latest',
  'accelerator 2.99',
  'accelerator 3.0',
  'compute 2.1',
  'garbage',
  '',
]

const jsonText = (value: unknown) => JSON.stringify(value)
const deepJson = '{"a":'.repeat(5000) + '0' + '}'.repeat(5000)
const BODIES: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\r\n',
      'null',
      '{}',
      '[]',
      '[{}]',
      '{"__proto__": {"x": 1}}',
      '['.repeat(3000),
      // Valid JSON nested 5,000 levels, whole and where a route walks it (issue 27: a 500).
      deepJson,
      `{"acc_specs":{"acc_capability":${deepJson}}}`,
      `[{"name":"fuzz-deep","groups":[${deepJson}]}]`,
    ),
  },
  { weight: 3, arbitrary: fc.json() },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      jsonText([{ name: 'fuzz-made', groups: [{ 'resources:FPGA': '1' }] }]),
      jsonText({ device_profile_name: 'fuzz-dp' }),
      jsonText([{ op: 'replace', path: '/hostname', value: 'nowhere' }]),
      jsonText({ hostname: 'nowhere' }),
      jsonText({ instance_uuid: '00000000-0000-4000-8000-000000000001' }),
      jsonText({ acc_specs: { a: 'b' } }),
      jsonText({ options: { x: 'y' } }),
    ),
  },
)

type Framing =
  | 'none'
  | 'length'
  | 'length-zero'
  | 'length-short'
  | 'length-long'
  | 'length-bad'
  | 'chunked'
  | 'chunked-empty'
  | 'chunked-bad'
  | 'chunked-open'
  | 'both'
const FRAMINGS: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom<Framing>('none', 'length') },
  { weight: 4, arbitrary: fc.constantFrom<Framing>('chunked', 'length-zero', 'chunked-empty') },
  {
    weight: 3,
    arbitrary: fc.constantFrom<Framing>('length-short', 'length-bad', 'chunked-bad', 'both'),
  },
  { weight: 1, arbitrary: fc.constantFrom<Framing>('length-long', 'chunked-open') },
)

/** The body bytes and headers of one framing; `incomplete`: the server must wait for more. */
function frame(
  framing: Framing,
  body: string,
): { headers: string[]; payload: string; incomplete: boolean; refused: boolean } {
  const length = Buffer.byteLength(body)
  const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`
  switch (framing) {
    case 'none':
      return { headers: [], payload: '', incomplete: false, refused: false }
    case 'length':
      return {
        headers: [`Content-Length: ${length}`],
        payload: body,
        incomplete: false,
        refused: false,
      }
    case 'length-zero':
      return { headers: ['Content-Length: 0'], payload: '', incomplete: false, refused: false }
    case 'length-short':
      // The rest of the body reads as the next request: garbage the server refuses.
      return {
        headers: [`Content-Length: ${Math.floor(length / 2)}`],
        payload: body,
        incomplete: length > 1,
        refused: true,
      }
    case 'length-long':
      return {
        headers: [`Content-Length: ${length + 10}`],
        payload: body,
        incomplete: true,
        refused: false,
      }
    case 'length-bad':
      return {
        headers: ['Content-Length: 1x', 'Content-Length: -1'].slice(length % 2),
        payload: body,
        incomplete: false,
        refused: true,
      }
    case 'chunked':
      return {
        headers: ['Transfer-Encoding: chunked'],
        payload: body === '' ? '0\r\n\r\n' : `${chunk(body)}0\r\n\r\n`,
        incomplete: false,
        refused: false,
      }
    case 'chunked-empty':
      return {
        headers: ['Transfer-Encoding: chunked'],
        payload: '0\r\n\r\n',
        incomplete: false,
        refused: false,
      }
    case 'chunked-bad':
      return {
        headers: ['Transfer-Encoding: chunked'],
        payload: `zz\r\n${body}\r\n0\r\n\r\n`,
        incomplete: false,
        refused: true,
      }
    case 'chunked-open':
      return {
        headers: ['Transfer-Encoding: chunked'],
        payload: body === '' ? '' : chunk(body),
        incomplete: true,
        refused: false,
      }
    case 'both':
      return {
        headers: [`Content-Length: ${length}`, 'Transfer-Encoding: chunked'],
        payload: `${chunk(body)}0\r\n\r\n`,
        incomplete: false,
        refused: true,
      }
  }
}

/** A request target: a route with its parameters filled in, sometimes a query or odd bytes. */
function targets(routes: string[], params: ParamValues): fc.Arbitrary<string> {
  const value = (name: string) =>
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...(params[name] ?? ['x'])) },
      { weight: 2, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent) },
      { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '..', '%2F', 'a'.repeat(300), '') },
    )
  const filled = fc.constantFrom(...routes).chain((route) => {
    const names = [...route.matchAll(/:(\w+)/g)].map((m) => m[1]!)
    return fc.tuple(...names.map(value)).map((vals) => {
      let i = 0
      return route.replace(/:\w+/g, () => vals[i++]!)
    })
  })
  const query = fc.oneof(
    { weight: 6, arbitrary: fc.constant('') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '?instance=x',
        '?hostname=nowhere',
        '?limit=-1&marker=x',
        '?a=%',
        '?&&=',
        '?' + 'q='.repeat(50),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.string({ maxLength: 20 }).map((s) => `?x=${encodeURIComponent(s)}`),
    },
  )
  return fc.oneof(
    { weight: 20, arbitrary: fc.tuple(filled, query).map(([p, q]) => p + q) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '*',
        'http://api.test/v2',
        '//v2//devices',
        '/v2/devices/../../etc',
        'v2',
        '/\u00e9',
      ),
    },
  )
}

/** One well-formed-enough HTTP request, and what the server owes it. */
function request(routes: string[], params: ParamValues) {
  return fc
    .record({
      method: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom(...METHODS) },
        { weight: 1, arbitrary: fc.constantFrom('get', 'PROPFIND', 'BREW', 'QUERY') },
      ),
      target: targets(routes, params),
      version: fc.oneof(
        { weight: 12, arbitrary: fc.constant('HTTP/1.1') },
        { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/1.2', 'HTTP/9.9', 'HTTP/1.1x') },
      ),
      contentTypes: fc.array(fc.constantFrom(...CONTENT_TYPES), { maxLength: 2 }),
      microversion: fc.option(fc.constantFrom(...VERSIONS), { nil: undefined }),
      expect: fc.option(fc.constantFrom('100-continue', '100-Continue', 'something-else'), {
        nil: undefined,
        freq: 6,
      }),
      token: fc.option(fc.constantFrom('x', 'gAAAAA-not-a-token', ''), { nil: undefined, freq: 6 }),
      host: fc.constantFrom(
        ['Host: api.test'],
        ['Host: api.test'],
        ['Host: api.test'],
        [],
        ['Host: a', 'Host: b'],
        ['Host: [::1'],
      ),
      framing: FRAMINGS,
      body: BODIES,
      close: fc.boolean(),
    })
    .map((r) => {
      const framed = frame(r.framing, r.body)
      const headers = [
        ...r.host,
        ...r.contentTypes.map((t) => `Content-Type: ${t}`),
        ...(r.microversion === undefined ? [] : [`OpenStack-API-Version: ${r.microversion}`]),
        ...(r.expect === undefined ? [] : [`Expect: ${r.expect}`]),
        ...(r.token === undefined ? [] : [`X-Auth-Token: ${r.token}`]),
        ...(r.close ? ['Connection: close'] : []),
        ...framed.headers,
      ]
      const text = `${r.method} ${r.target} ${r.version}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${framed.payload}`
      return { text, method: r.method, incomplete: framed.incomplete, refused: framed.refused }
    })
}

/** Requests over one connection: one, two pipelined, or raw garbage. */
export function fuzzCases(routes: string[], params: ParamValues): fc.Arbitrary<FuzzCase> {
  const one = request(routes, params)
  return fc.oneof(
    {
      weight: 16,
      arbitrary: one.map((r) => ({
        bytes: Buffer.from(r.text),
        methods: [r.method],
        incomplete: r.incomplete,
        refused: r.refused,
      })),
    },
    {
      weight: 3,
      arbitrary: fc.tuple(one, one).map(([a, b]) => ({
        bytes: Buffer.from(a.text + b.text),
        methods: [a.method, b.method],
        incomplete: a.incomplete || b.incomplete || a.refused,
        refused: a.refused || b.refused,
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.uint8Array({ minLength: 1, maxLength: 200 }).map((b) => Buffer.from(b)),
          fc.string({ maxLength: 100 }).map((s) => Buffer.from(`${s}\r\n\r\n`)),
        )
        .map((bytes) => ({ bytes, methods: ['GET'], incomplete: true, refused: true })),
    },
  )
}
