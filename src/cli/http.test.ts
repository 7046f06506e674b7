/** The CLI's HTTP transport against a local server on a port that fetch refuses (6665-6669, Cyborg's 6666 among them). */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { apiExchange, apiRequest, CliError } from './http.js'

/** Listens on the first free port of the Fetch standard's bad ports 6665-6669. */
async function listenOnBadPort(server: Server): Promise<number> {
  for (const port of [6666, 6665, 6667, 6668, 6669]) {
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (ok) return port
  }
  throw new Error('ports 6665-6669 are all taken')
}

void describe('cli http transport', () => {
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      if (req.url === '/v1/missing' || req.url === '/v1/missing-17') {
        // Cyborg ≤ 16.x sent the fault as JSON text, 17.0.0 (and we) as an object.
        const fault = { faultstring: 'accelerator x not found' }
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            error_message: req.url === '/v1/missing' ? JSON.stringify(fault) : fault,
          }),
        )
        return
      }
      res.writeHead(201, {
        'content-type': 'application/json',
        location: 'http://here/v1/accelerators/x',
        etag: '"abc"',
      })
      res.end(
        JSON.stringify({
          method: req.method,
          token: req.headers['x-auth-token'],
          ifMatch: req.headers['if-match'],
          body,
        }),
      )
    })
  })
  let url: string
  before(async () => {
    url = `http://127.0.0.1:${await listenOnBadPort(server)}`
  })
  after(() => server.close())

  void it("reaches an API on Cyborg's default port range, with body, headers and token", async () => {
    const res = await apiExchange<Record<string, string>>(
      { url, token: 't0k' },
      'PUT',
      '/v1/accelerators/x',
      { body: { a: 1 }, headers: { 'if-match': '"e"' } },
    )
    assert.equal(res.status, 201)
    assert.equal(res.headers.get('location'), 'http://here/v1/accelerators/x')
    assert.equal(res.headers.get('etag'), '"abc"')
    assert.deepEqual(res.body, { method: 'PUT', token: 't0k', ifMatch: '"e"', body: '{"a":1}' })
  })

  void it('turns an error answer and an unreachable API into one-line CliErrors', async () => {
    await assert.rejects(
      apiRequest({ url }, 'GET', '/v1/missing'),
      (err) =>
        err instanceof CliError &&
        err.status === 404 &&
        /HTTP 404: accelerator x not found/.test(err.message),
    )
    await assert.rejects(
      apiRequest({ url }, 'GET', '/v1/missing-17'),
      (err) =>
        err instanceof CliError &&
        err.status === 404 &&
        /HTTP 404: accelerator x not found/.test(err.message),
    )
    await assert.rejects(
      apiRequest({ url: 'http://127.0.0.1:1' }, 'GET', '/v1'),
      (err) =>
        err instanceof CliError &&
        /cannot reach the Cyborg API at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/.test(err.message),
    )
    await assert.rejects(
      apiRequest({ url: 'nope' }, 'GET', '/v1'),
      (err) => err instanceof CliError && /is not a URL/.test(err.message),
    )
  })
})
