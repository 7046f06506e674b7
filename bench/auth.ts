/**
 * The cost of Keystone authentication on a read (issue 6): `GET /v2/device_profiles/{uuid}` on
 * `cyborg up` with `[api] auth_strategy = keystone` and a token already in the API's cache, against
 * the same request on `cyborg up` with noauth, loaded alternately in the same run with autocannon
 * (in turn first and second, round by round).
 * A real Keystone (test/support/peers/keystone.ts) issues the token; the first request validates it, the
 * warm-up and the measured run then hit the cache. Goal: keystone ≥ 90 % of noauth's req/s.
 * Besides req/s and latency it reports each server's CPU time per request (from /proc), which
 * other load on a shared machine disturbs less than req/s.
 * Prints one JSON document. Usage: npm run bench:auth [-- --duration 10 --connections 50 --rounds 2]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import {
  load as loadUrl,
  machineFacts,
  meanFigures,
  compareFigures,
  type LoadFigures,
} from './support/load.js'
import { createPersonas, keystoneSkip, startKeystone } from '../test/support/peers/keystone.js'
import { startService, type RunningService } from '../test/support/service.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
  },
})
const duration = Number(values.duration)
const connections = Number(values.connections)
const rounds = Number(values.rounds)

type Figures = LoadFigures

const load = (service: RunningService, url: string, headers: Record<string, string>) =>
  loadUrl(url, { connections, duration, pid: service.child.pid, headers })

/** Creates one device profile and returns the URL of GET-one on it. */
async function profileUrl(
  service: RunningService,
  headers: Record<string, string>,
): Promise<string> {
  const res = await fetch(`${service.url}/v2/device_profiles`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify([
      {
        name: 'bench-auth-dp',
        groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
      },
    ]),
  })
  if (res.status !== 201) throw new Error(`profile create: ${res.status} ${await res.text()}`)
  const uuid = ((await res.json()) as { uuid: string }).uuid
  return `${service.url}/v2/device_profiles/${uuid}`
}

const mean = meanFigures

const why = await keystoneSkip()
if (why) throw new Error(`bench:auth needs a Keystone: ${why}`)
const loadAtStart = loadavg()[0]!
const ks = await startKeystone()
const stops: (() => Promise<unknown>)[] = [() => ks.stop()]
try {
  const people = await createPersonas(ks, 'bench')
  const admin = await people.token('admin')
  const reader = await people.token('reader')
  const common = { CYBORG_LOG_LEVEL: 'warn', CYBORG_DEFAULT__HOST: 'bench-host' }
  const noauth = await startService({ env: { ...common, CYBORG_API__AUTH_STRATEGY: 'noauth' } })
  stops.push(() => noauth.stop())
  const keystone = await startService({
    env: {
      ...common,
      CYBORG_API__AUTH_STRATEGY: 'keystone',
      CYBORG_KEYSTONE_AUTHTOKEN__AUTH_URL: ks.url,
      CYBORG_KEYSTONE_AUTHTOKEN__USERNAME: people.apiUser.username,
      CYBORG_KEYSTONE_AUTHTOKEN__PASSWORD: people.apiUser.password,
      CYBORG_KEYSTONE_AUTHTOKEN__PROJECT_NAME: people.apiUser.projectName,
      CYBORG_KEYSTONE_AUTHTOKEN__TOKEN_CACHE_TIME: '300',
    },
  })
  stops.push(() => keystone.stop())

  const noauthUrl = await profileUrl(noauth, {})
  const keystoneUrl = await profileUrl(keystone, { 'x-auth-token': admin })
  const readerHeaders = { 'x-auth-token': reader }
  // The reader's token is validated once here and served from the cache from then on.
  const first = await fetch(keystoneUrl, { headers: readerHeaders })
  if (first.status !== 200)
    throw new Error(`GET-one as the reader: ${first.status} ${await first.text()}`)
  const unauthenticated = await fetch(keystoneUrl)
  if (unauthenticated.status !== 401)
    throw new Error(`GET-one without a token answered ${unauthenticated.status}, not 401`)

  const perRound: { noauth: Figures; keystone: Figures }[] = []
  for (let i = 0; i < rounds; i++) {
    // Odd rounds load keystone first, so that neither side always runs second.
    const k1 = i % 2 === 1 ? await load(keystone, keystoneUrl, readerHeaders) : undefined
    const n = await load(noauth, noauthUrl, {})
    const k = k1 ?? (await load(keystone, keystoneUrl, readerHeaders))
    perRound.push({ noauth: n, keystone: k })
  }
  const n = mean(perRound.map((r) => r.noauth))
  const k = mean(perRound.map((r) => r.keystone))
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'auth',
        date: new Date().toISOString(),
        machine: machineFacts(loadAtStart),
        settings: {
          connections,
          durationSeconds: duration,
          rounds,
          request: 'GET /v2/device_profiles/{uuid}',
          client: 'autocannon (same machine)',
        },
        results: {
          noauth: n,
          keystoneCachedToken: k,
          ...compareFigures(k, n),
          goal: 0.9,
          rounds: perRound.map((r) => ({
            ...r,
            ratio: Math.round((r.keystone.requestsPerSec / r.noauth.requestsPerSec) * 1000) / 1000,
          })),
        },
      },
      null,
      2,
    )}\n`,
  )
} finally {
  for (const stop of stops.reverse()) await stop()
}
