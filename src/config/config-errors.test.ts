/** Configuration errors: one line naming where, section, option, value and the expected form. */
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { dirname, join } from 'node:path'
import { optionError } from './config.js'
import { file, load, rejects } from '../../test/support/config.js'

void describe('errors: one line naming where, section, option, value and the expected form', () => {
  void test('a wrong type in a file', () => {
    const p = file('[api]\nport = abc\n', 'cyborg.conf')
    rejects({ files: [p] }, `${p}:2: [api] port = "abc": expected an integer 1-65535`)
  })

  void test('a wrong type in the environment', () => {
    rejects(
      { env: { CYBORG_API__PORT: '70000' } },
      'CYBORG_API__PORT: [api] port = "70000": expected an integer 1-65535',
    )
    rejects(
      { env: { CYBORG_CONDUCTOR__SAVE_INTERVAL_MS: '-1' } },
      'CYBORG_CONDUCTOR__SAVE_INTERVAL_MS: [conductor] save_interval_ms = "-1": expected an integer >= 0',
    )
    rejects(
      { env: { CYBORG_CONDUCTOR__MAX_BATCH: '0' } },
      /\[conductor\] max_batch = "0": expected an integer >= 1$/,
    )
    rejects(
      { env: { CYBORG_DEFAULT__DEBUG: 'maybe' } },
      /\[DEFAULT\] debug = "maybe": expected a boolean \(true\/false, yes\/no, on\/off, 1\/0\)$/,
    )
    rejects(
      { env: { CYBORG_OSLO_MESSAGING_RABBIT__RABBIT_QUORUM_QUEUE: 'quorum' } },
      /\[oslo_messaging_rabbit\] rabbit_quorum_queue = "quorum": expected a boolean \(true\/false, yes\/no, on\/off, 1\/0\)$/,
    )
    rejects(
      { env: { CYBORG_PLACEMENT__AUTH_TYPE: 'token' } },
      /\[placement\] auth_type = "token": expected one of none, admin_token, password$/,
    )
    rejects(
      { env: { CYBORG_DEFAULT__STATE_PATH: ' ' } },
      /\[DEFAULT\] state_path = " ": expected a non-empty path$/,
    )
  })

  void test('[api] trusted_proxies: IP addresses and CIDR networks only (issue 27)', () => {
    const c = load({})
    assert.equal(c.oslo_middleware.enable_proxy_headers_parsing, false)
    assert.deepEqual(c.api.trusted_proxies, ['127.0.0.1', '::1'])
    const ok = load({ env: { CYBORG_API__TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8,192.0.2.7' } })
    assert.deepEqual(ok.api.trusted_proxies, ['10.0.0.0/8', 'fd00::/8', '192.0.2.7'])
    for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.1/', 'fd00::/129'])
      rejects(
        { env: { CYBORG_API__TRUSTED_PROXIES: bad } },
        new RegExp(
          `\\[api\\] trusted_proxies = .*expected a comma-separated list of IP addresses or CIDR networks`,
        ),
      )
  })

  void test('[api] api_workers: an integer 1-256, or unset (issue 28)', () => {
    for (const bad of ['0', '-2', 'two', '1.5', '257'])
      rejects(
        { env: { CYBORG_API__API_WORKERS: bad } },
        `CYBORG_API__API_WORKERS: [api] api_workers = "${bad}": expected an integer 1-256`,
      )
    const p = file('[api]\napi_workers = 0\n', 'workers.conf')
    rejects({ files: [p] }, `${p}:2: [api] api_workers = "0": expected an integer 1-256`)
    assert.equal(load({ env: { CYBORG_API__API_WORKERS: '4' } }).api.api_workers, 4)
    assert.equal(load({ env: { CYBORG_API__API_WORKERS: '' } }).api.api_workers, undefined)
  })

  void test('[api] time limits must nest', () => {
    const c = load({})
    assert.deepEqual(
      [
        c.api.headers_timeout,
        c.api.request_timeout,
        c.api.handler_timeout,
        c.api.keepalive_timeout,
        c.api.client_socket_timeout,
      ],
      [10, 30, 60, 65, 120],
    )
    rejects(
      { env: { CYBORG_API__HEADERS_TIMEOUT: '40' } },
      'CYBORG_API__HEADERS_TIMEOUT: [api] headers_timeout = "40": expected at most [api] request_timeout (30)',
    )
    rejects(
      { env: { CYBORG_API__REQUEST_TIMEOUT: '60' } },
      /\[api\] request_timeout = "60": expected below \[api\] handler_timeout \(60\)$/,
    )
    rejects(
      { env: { CYBORG_API__CLIENT_SOCKET_TIMEOUT: '60' } },
      /\[api\] handler_timeout = "60": expected below \[api\] client_socket_timeout \(60\)$/,
    )
  })

  void test('bad URLs', () => {
    rejects(
      { env: { CYBORG_API__PUBLIC_ENDPOINT: 'ftp://x' } },
      /\[api\] public_endpoint = "ftp:\/\/x": expected an http\(s\) URL/,
    )
    rejects(
      { env: { CYBORG_KEYSTONE_AUTHTOKEN__AUTH_URL: 'keystone:5000' } },
      /\[keystone_authtoken\] auth_url = "keystone:5000": expected an http\(s\) URL/,
    )
    rejects(
      { env: { CYBORG_DEFAULT__TRANSPORT_URL: 'kafka://h:9092' } },
      'CYBORG_DEFAULT__TRANSPORT_URL: [DEFAULT] transport_url = "kafka://h:9092": expected empty (in-process bus) or rabbit://user:pass@host:port/vhost',
    )
    for (const bad of [
      'http://db/x',
      'postgresql://db',
      'postgresql:///cyborg',
      'sqlite:relative.db',
      'mysql//db/x',
      // A host list only for MariaDB/MySQL, and every entry a host
      'postgresql://db1,db2/cyborg',
      'mysql://db1,,db2/cyborg',
      'mysql://db1:x,db2/cyborg',
    ]) {
      rejects(
        { env: { CYBORG_DATABASE__CONNECTION: bad } },
        /\[database\] connection = ".*": expected sqlite:\/\/\/path, postgresql:\/\/user:pass@host:port\/db or mysql\+pymysql:\/\/user:pass@host:port\/db$/,
      )
    }
  })

  void test('passwords never appear in messages', () => {
    const p = file('[database]\nconnection = mysqlx://cyborg:s3cret@db/cyborg\n')
    rejects(
      { files: [p] },
      `${p}:2: [database] connection = "mysqlx://cyborg:***@db/cyborg": expected ` +
        `sqlite:///path, postgresql://user:pass@host:port/db or ` +
        `mysql+pymysql://user:pass@host:port/db`,
    )
    rejects(
      { env: { CYBORG_DEFAULT__TRANSPORT_URL: 'kafka://u:s3cret@h1:1,u:s3cret@h2:2/' } },
      /^CYBORG_DEFAULT__TRANSPORT_URL: \[DEFAULT\] transport_url = "kafka:\/\/u:\*\*\*@h1:1,u:\*\*\*@h2:2\/"/,
    )
  })

  void test('an interpolated value shows what it expanded to', () => {
    rejects(
      { env: { CYBORG_API__PORT: '${periodic_interval}0000' } },
      'CYBORG_API__PORT: [api] port = "${periodic_interval}0000" (expands to "600000"): expected an integer 1-65535',
    )
  })

  void test('unknown sections and options', () => {
    const s = file('[DEFAULT]\nhost = x\n\n[oslo_concurrency]\n')
    rejects(
      { files: [s] },
      `${s}:4: [oslo_concurrency]: unknown section; expected one of DEFAULT, api, ` +
        `database, agent, pci, gpu_devices, nvidia_gpu, nvme_ssd, intel_fpga, xilinx_fpga, ` +
        `intel_qat, intel_nic, nic_devices, conductor, events, custody, metrics, placement, ` +
        `glance, barbican, nova, service_user, keystone_authtoken, oslo_messaging_notifications, ` +
        `oslo_messaging_rabbit, oslo_middleware, oslo_policy, ssl, webhooks, quota, oslo_limit`,
    )
    const o = file('[api]\nprot = 1\n')
    rejects({ files: [o] }, `${o}:2: [api] prot: unknown option; did you mean port?`)
    const w = file('[conductor]\nsecret_sauce = 1\n')
    rejects(
      { files: [w] },
      `${w}:2: [conductor] secret_sauce: unknown option; options of [conductor] are ` +
        `save_interval_ms, max_batch, health_recovery_reports, clean_retry_interval, clean_placement_hold_ms, ` +
        `reconfigure_timeout`,
    )
    rejects(
      { env: { CYBORG_API__NOPE: '1' } },
      /^CYBORG_API__NOPE: \[api\] nope: unknown option; options of \[api\] are host_ip, port/,
    )
    rejects(
      { env: { CYBORG_SWIFT__NUM_RETRIES: '1' } },
      /^CYBORG_SWIFT__NUM_RETRIES: \[swift\]: unknown section/,
    )
  })

  void test('syntax errors do not echo the line', () => {
    const p = file('[api]\nport 6666 s3cret\n')
    rejects({ files: [p] }, `${p}:2: cannot parse line: expected "[section]" or "option = value"`)
    const q = file('port = 1\n')
    rejects({ files: [q] }, `${q}:1: option outside any section: expected a "[section]" line first`)
  })

  void test('a missing file', () => {
    const missing = join(dirname(file('')), 'missing.conf')
    rejects({ files: [missing] }, `${missing}: cannot read config file: ENOENT`)
  })

  void test('keystoneauth options that need company', () => {
    rejects(
      {
        env: {
          CYBORG_PLACEMENT__AUTH_TYPE: 'password',
          CYBORG_PLACEMENT__AUTH_URL: 'http://ks:5000/v3',
        },
      },
      'CYBORG_PLACEMENT__AUTH_TYPE: [placement] auth_type = "password": expected auth_url, ' +
        'username, password to be set in [placement] too (missing: username, password)',
    )
    rejects(
      { env: { CYBORG_NOVA__AUTH_TYPE: 'admin_token' } },
      /\[nova\] auth_type = "admin_token": expected endpoint_override, token to be set in \[nova\] too/,
    )
    const ok = load({
      env: {
        CYBORG_NOVA__AUTH_TYPE: 'admin_token',
        CYBORG_NOVA__TOKEN: 't',
        CYBORG_NOVA__ENDPOINT_OVERRIDE: 'http://nova:8774/v2.1',
      },
    })
    assert.equal(ok.nova.token, 't')
  })

  void test('optionError: later checks produce the same shape', () => {
    const p = file('[agent]\nenabled_drivers = fake, nope\n')
    const c = load({ files: [p] })
    const err = optionError(
      c,
      'agent',
      'enabled_drivers',
      'unknown driver "nope"; possible values are: fake',
    )
    assert.equal(
      err.message,
      `${p}:2: [agent] enabled_drivers = "fake, nope": unknown driver "nope"; possible values are: fake`,
    )
    const d = load({ env: { CYBORG_DEFAULT__TRANSPORT_URL: 'rabbit://u:pw@h/' } })
    assert.equal(
      optionError(d, 'DEFAULT', 'transport_url', 'not yet supported').message,
      'CYBORG_DEFAULT__TRANSPORT_URL: [DEFAULT] transport_url = "rabbit://u:***@h/": not yet supported',
    )
  })
})
