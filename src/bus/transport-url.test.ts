import { test } from 'node:test'
import assert from 'node:assert/strict'
import { describeBroker, parseTransportUrl, redactTransportUrl } from './transport-url.js'
import { InvalidInputError } from '../domain/errors.js'

void test('rabbit:// URLs: credentials, ports, vhost, several hosts in order', () => {
  assert.deepEqual(parseTransportUrl('rabbit://guest:guest@127.0.0.1:5672/'), [
    { hostname: '127.0.0.1', port: 5672, username: 'guest', password: 'guest', vhost: '/' },
  ])
  assert.deepEqual(parseTransportUrl('rabbit://mq'), [{ hostname: 'mq', port: 5672, vhost: '/' }])
  assert.deepEqual(parseTransportUrl('rabbit://u%40x:p%2Fw%3A@mq:5673/cy%2Fborg'), [
    { hostname: 'mq', port: 5673, username: 'u@x', password: 'p/w:', vhost: 'cy/borg' },
  ])
  assert.deepEqual(
    parseTransportUrl('rabbit://a:1@h1:5672,b:2@h2/cyborg').map((b) => [
      b.username,
      b.hostname,
      b.port,
      b.vhost,
    ]),
    [
      ['a', 'h1', 5672, 'cyborg'],
      ['b', 'h2', 5672, 'cyborg'],
    ],
  )
  assert.equal(parseTransportUrl('rabbit://u@h/')[0]?.password, '')
})

void test('what cannot be used is an InvalidInputError that never shows the password', () => {
  for (const [url, why] of [
    ['amqp://u:s3cret@h/', /expected rabbit:\/\//],
    ['rabbit://u:s3cret@h:0/', /port 0 is not 1-65535/],
    ['rabbit://u:s3cret@h:70000/', /port 70000/],
    ['rabbit://u:s3cret@h/?ssl=1', /query parameters/],
    ['rabbit://u:s3cret@/', /is not host\[:port\]/],
    ['rabbit://u:s3cret@h/%zz', /virtual host/],
  ] as const) {
    assert.throws(
      () => parseTransportUrl(url),
      (err) =>
        err instanceof InvalidInputError &&
        why.test(err.message) &&
        !err.message.includes('s3cret'),
      url,
    )
  }
})

void test('brokers and URLs are shown with the password masked', () => {
  const [a, b] = parseTransportUrl('rabbit://cyborg:s3cret@mq1:5672,cyborg:s3cret@mq2:5673/prod')
  assert.equal(describeBroker(a!), 'rabbit://cyborg:***@mq1:5672/prod')
  assert.equal(describeBroker(b!), 'rabbit://cyborg:***@mq2:5673/prod')
  assert.equal(describeBroker(parseTransportUrl('rabbit://mq')[0]!), 'rabbit://mq:5672/')
  assert.equal(redactTransportUrl('rabbit://u:s3cret@h1,v:pw@h2/'), 'rabbit://u:***@h1,v:***@h2/')
})
