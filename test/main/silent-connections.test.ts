/**
 * `[api] headers_timeout` against many connections at once, on the real `cyborg up` over TCP: 200
 * connections that never send a byte are all closed (HTTP: answered 408 first), over HTTP and
 * over HTTPS (where no byte means no TLS handshake either), while a client that is slow but sends
 * its request within the limit is answered as usual.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { request as httpsRequest } from 'node:https'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { startService, type RunningService } from '../support/service.js'
import { rawExchange } from '../support/fuzz/raw-http.js'

const CONNECTIONS = 200
/** Far above the 1 s limit, far below Node's own 30 s check and TLS's 120 s handshake limit. */
const DEADLINE_MS = 12_000
const LIMITS = { CYBORG_API__HEADERS_TIMEOUT: '1', CYBORG_API__REQUEST_TIMEOUT: '2' }

interface Silent {
  /** Closed by the server before the deadline. */
  closed: boolean
  /** What the server sent before closing. */
  received: string
}

/** Opens `count` connections that send nothing; resolves when each is closed or the deadline passes. */
function silentConnections(port: number, count: number): Promise<Silent[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Silent>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port })
          let received = ''
          const deadline = setTimeout(() => {
            resolve({ closed: false, received })
            socket.destroy()
          }, DEADLINE_MS)
          socket.on('data', (d: Buffer) => (received += d.toString('latin1')))
          socket.on('error', () => {})
          socket.on('close', () => {
            clearTimeout(deadline)
            resolve({ closed: true, received })
          })
        }),
    ),
  )
}

const count = (all: Silent[], test: (s: Silent) => boolean) => all.filter(test).length

void describe('[api] headers_timeout closes every silent connection', () => {
  void describe('over HTTP', () => {
    let service: RunningService
    before(async () => {
      service = await startService({ env: LIMITS })
    })
    after(() => service?.stop())

    void it(`closes ${CONNECTIONS} connections that send nothing, each with a 408`, async () => {
      const all = await silentConnections(service.port, CONNECTIONS)
      assert.equal(
        count(all, (s) => s.closed),
        CONNECTIONS,
        'some were never closed',
      )
      assert.equal(
        count(all, (s) => s.received.startsWith('HTTP/1.1 408 ')),
        CONNECTIONS,
        all.find((s) => !s.received.startsWith('HTTP/1.1 408 '))?.received,
      )
      // The server still answers.
      assert.equal((await fetch(`${service.url}/healthcheck`)).status, 200)
    })

    void it('answers a client that waits, then sends its headers slowly, within the limit', async () => {
      const head = 'GET /healthcheck HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'
      // Silent for 0.4 s, then the headers in 4 pieces 0.1 s apart: 0.7 s in all, under 1 s.
      const quarter = Math.ceil(head.length / 4)
      const answer = await rawExchange(service.port, '', {
        deadlineMs: 8000,
        pieces: {
          chunks: [
            '',
            '',
            '',
            '',
            ...[0, 1, 2, 3].map((i) => head.slice(i * quarter, (i + 1) * quarter)),
          ],
          gapMs: 100,
        },
      })
      assert.equal(answer.timedOut, false)
      assert.deepEqual(
        answer.responses.map((r) => r.status),
        [200],
      )
    })

    void it('a keep-alive connection that sent a request is not cut by the first-request timer', async () => {
      // Two requests 1.2 s apart (past headers_timeout, within keepalive_timeout's default):
      // the limit is on receiving headers, not on a connection's age.
      const socket = connect({ host: '127.0.0.1', port: service.port })
      let received = ''
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')))
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      socket.write('GET /healthcheck HTTP/1.1\r\nHost: a\r\n\r\n')
      await new Promise((r) => setTimeout(r, 1200))
      socket.write('GET /healthcheck HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
      await closed
      assert.equal(received.match(/HTTP\/1\.1 200 /g)?.length, 2, received)
    })
  })

  void describe('over HTTPS ([api] enable_ssl_api)', () => {
    let service: RunningService
    let dir: string
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'cyborg-silent-'))
      const [key, cert] = [path.join(dir, 'server.key'), path.join(dir, 'server.pem')]
      await promisify(execFile)('openssl', [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'],
        ...['-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'],
      ])
      service = await startService({
        env: {
          ...LIMITS,
          CYBORG_API__ENABLE_SSL_API: 'true',
          CYBORG_SSL__CERT_FILE: cert,
          CYBORG_SSL__KEY_FILE: key,
        },
        ready: (url) =>
          new Promise((resolve) => {
            const req = httpsRequest(
              `${url.replace('http:', 'https:')}/healthcheck`,
              { rejectUnauthorized: false },
              (res) => {
                res.resume()
                resolve(res.statusCode === 200)
              },
            )
            req.on('error', () => resolve(false))
            req.end()
          }),
      })
    })
    after(async () => {
      await service?.stop()
      await rm(dir, { recursive: true, force: true })
    })

    void it(`closes ${CONNECTIONS} connections that never start the TLS handshake`, async () => {
      const all = await silentConnections(service.port, CONNECTIONS)
      assert.equal(
        count(all, (s) => s.closed),
        CONNECTIONS,
        'some were never closed',
      )
    })
  })
})
