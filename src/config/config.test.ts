import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../domain/errors.js'
import {
  configFiles,
  loadConfig,
  optionError,
  optionSource,
  redactConfig,
  type LoadConfigOptions,
} from './config.js'

let dir: string
let n = 0
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-config-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

/** Writes an INI file into the temp dir and returns its path. */
function file(text: string, name = `c${++n}.conf`): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

const load = (o: Partial<LoadConfigOptions> = {}) =>
  loadConfig({ files: [], env: {}, hostname: 'node-1', cwd: '/srv/cyborg', ...o })

/** Asserts that loading throws a ConfigError with exactly `message`, on one line. */
function rejects(o: Partial<LoadConfigOptions>, message: string | RegExp) {
  assert.throws(
    () => load(o),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
      assert.equal(err.code, 'CONFIG_INVALID')
      assert.ok(!err.message.includes('\n'), 'message must be one line')
      if (typeof message === 'string') assert.equal(err.message, message)
      else assert.match(err.message, message)
      return true
    },
  )
}

void describe('defaults', () => {
  void test('without files or env, every option has its built-in default', () => {
    const c = load()
    assert.equal(c.DEFAULT.host, 'node-1')
    assert.equal(c.DEFAULT.state_path, '/srv/cyborg/.cyborg')
    assert.equal(c.DEFAULT.transport_url, '')
    assert.equal(c.DEFAULT.periodic_interval, 60)
    assert.equal(c.DEFAULT.bind_timeout, 60)
    assert.equal(c.DEFAULT.debug, false)
    assert.deepEqual(c.api, {
      host_ip: '127.0.0.1',
      port: 6666,
      public_endpoint: undefined,
      api_workers: 1,
      max_arqs_per_request: 64,
      auth_strategy: 'noauth',
      noauth_project_id: '00000000-0000-0000-0000-000000000000',
      enable_ssl_api: false,
      headers_timeout: 10,
      request_timeout: 30,
      handler_timeout: 60,
      keepalive_timeout: 65,
      client_socket_timeout: 120,
    })
    assert.deepEqual(c.ssl, { cert_file: undefined, key_file: undefined, ca_file: undefined })
    assert.equal(c.keystone_authtoken.token_cache_time, 300)
    assert.equal(c.keystone_authtoken.service_token_roles_required, true)
    assert.equal(c.database.connection, 'sqlite:////srv/cyborg/.cyborg/cyborg.sqlite')
    assert.deepEqual(c.agent, {
      enabled_drivers: ['fake'],
      resource_provider_name: undefined,
      host_root: '/',
      auto_activate: false,
    })
    assert.deepEqual(c.conductor, { save_interval_ms: 2, max_batch: 64 })
    assert.equal(c.placement.auth_type, 'none')
    assert.equal(c.placement.password, undefined)
    assert.deepEqual(c.keystone_authtoken.service_token_roles, ['service'])
    assert.deepEqual(c.keystone_authtoken.memcached_servers, [])
    assert.equal(optionSource(c, 'api', 'port'), 'built-in default')
  })

  void test('hostname defaults to the machine name', () => {
    const c = loadConfig({ files: [], env: {} })
    assert.ok(c.DEFAULT.host.length > 0)
  })
})

void describe('files and environment', () => {
  void test('a later file overrides an earlier one, option by option', () => {
    const a = file('[DEFAULT]\nhost = a\ndebug = true\n[api]\nport = 7000\n')
    const b = file('[api]\nport = 7001\n')
    const c = load({ files: [a, b] })
    assert.equal(c.DEFAULT.host, 'a')
    assert.equal(c.DEFAULT.debug, true)
    assert.equal(c.api.port, 7001)
    assert.equal(optionSource(c, 'api', 'port'), `${b}:2`)
    assert.equal(optionSource(c, 'DEFAULT', 'host'), `${a}:2`)
    assert.deepEqual(configFiles(c), [a, b])
  })

  void test('CYBORG_<SECTION>__<OPTION> overrides every file', () => {
    const a = file('[api]\nport = 7000\nhost_ip = 0.0.0.0\n')
    const c = load({
      files: [a],
      env: {
        CYBORG_API__PORT: '6667',
        CYBORG_DEFAULT__HOST: 'from-env',
        CYBORG_KEYSTONE_AUTHTOKEN__MEMCACHED_SERVERS: 'm1:11211, m2:11211',
      },
    })
    assert.equal(c.api.port, 6667)
    assert.equal(c.api.host_ip, '0.0.0.0')
    assert.equal(c.DEFAULT.host, 'from-env')
    assert.equal(
      c.agent.resource_provider_name,
      undefined,
      'unset: the agent derives it from the host',
    )
    assert.deepEqual(c.keystone_authtoken.memcached_servers, ['m1:11211', 'm2:11211'])
    assert.equal(optionSource(c, 'api', 'port'), 'CYBORG_API__PORT')
  })

  void test('env names are case-insensitive; CYBORG_ variables without __ are not config', () => {
    const c = load({
      env: {
        CYBORG_default__debug: 'yes',
        CYBORG_LOG_LEVEL: 'debug',
        CYBORG_REQUIRE_SERVICES: '1',
        OTHER__X: '1',
      },
    })
    assert.equal(c.DEFAULT.debug, true)
  })

  void test('oslo INI syntax: comments, quotes, colon separator, continuation lines, inline # kept', () => {
    const p = file(
      [
        '# a comment',
        '; another',
        '[DEFAULT]',
        'host: "quoted host"',
        "state_path = '/var/lib/cyborg'",
        '[placement]',
        'password = pa#ss;word',
        '[api]',
        'host_ip =',
        '   10.0.0.1',
        '',
      ].join('\n'),
    )
    const c = load({ files: [p] })
    assert.equal(c.DEFAULT.host, 'quoted host')
    assert.equal(c.DEFAULT.state_path, '/var/lib/cyborg')
    assert.equal(c.placement.password, 'pa#ss;word')
    assert.equal(c.api.host_ip, '\n10.0.0.1')
  })

  void test('an empty value unsets an optional option', () => {
    const p = file('[api]\npublic_endpoint =\n[placement]\nusername =\n')
    const c = load({ files: [p] })
    assert.equal(c.api.public_endpoint, undefined)
    assert.equal(c.placement.username, undefined)
  })
})

void describe('types', () => {
  void test('booleans accept true/false, yes/no, on/off, 1/0 in any case', () => {
    for (const [raw, want] of [
      ['True', true],
      ['no', false],
      ['ON', true],
      ['off', false],
      ['1', true],
      ['0', false],
    ] as const) {
      assert.equal(
        load({ env: { CYBORG_AGENT__AUTO_ACTIVATE: raw } }).agent.auto_activate,
        want,
        raw,
      )
    }
  })

  void test('lists are comma-separated, trimmed, without empty items', () => {
    assert.deepEqual(
      load({ env: { CYBORG_AGENT__ENABLED_DRIVERS: ' fake , nvidia-gpu,,' } }).agent
        .enabled_drivers,
      ['fake', 'nvidia-gpu'],
    )
    assert.deepEqual(load({ env: { CYBORG_AGENT__ENABLED_DRIVERS: '' } }).agent.enabled_drivers, [])
  })

  void test('relative paths resolve against the working directory', () => {
    assert.equal(
      load({ env: { CYBORG_DEFAULT__STATE_PATH: '../state' } }).DEFAULT.state_path,
      '/srv/state',
    )
  })

  void test('database URLs in every accepted form', () => {
    for (const url of [
      'sqlite://',
      'sqlite:///rel.db',
      'sqlite:////abs/path.db',
      'postgresql://cyborg:pw@db:5432/cyborg',
      'postgresql+psycopg2://cyborg@db/cyborg',
      'postgres://db/cyborg',
      'mysql+pymysql://cyborg:pw@db:3306/cyborg?charset=utf8',
      'mysql://root@127.0.0.1/cyborg',
      'mariadb://db/cyborg',
    ]) {
      assert.equal(load({ env: { CYBORG_DATABASE__CONNECTION: url } }).database.connection, url)
    }
  })

  void test('transport_url: empty or rabbit://', () => {
    for (const url of [
      '',
      'rabbit://guest:guest@127.0.0.1:5672/',
      'rabbit://u:p@h1:5672,u:p@h2:5672/cyborg',
      'rabbit://h',
    ]) {
      assert.equal(load({ env: { CYBORG_DEFAULT__TRANSPORT_URL: url } }).DEFAULT.transport_url, url)
    }
  })
})

void describe('interpolation', () => {
  void test('$name, ${name}, ${section.name} and $$', () => {
    const p = file(
      [
        '[DEFAULT]',
        'state_path = /var/lib/cyborg',
        'host = h-${api.port}',
        '[database]',
        'connection = sqlite:///${state_path}/db-$$1.sqlite',
        '[agent]',
        'resource_provider_name = $host',
      ].join('\n'),
    )
    const c = load({ files: [p] })
    assert.equal(c.database.connection, 'sqlite:////var/lib/cyborg/db-$1.sqlite')
    assert.equal(c.DEFAULT.host, 'h-6666')
    assert.equal(c.agent.resource_provider_name, 'h-6666')
  })

  void test('a bare name is looked up in the same section first, then in [DEFAULT]', () => {
    const c = load({
      env: {
        CYBORG_PLACEMENT__USERNAME: 'svc',
        CYBORG_PLACEMENT__PROJECT_NAME: '$username-project',
        CYBORG_NOVA__REGION_NAME: '$host',
      },
    })
    assert.equal(c.placement.project_name, 'svc-project')
    assert.equal(c.nova.region_name, 'node-1')
  })

  void test('the default database follows state_path', () => {
    assert.equal(
      load({ env: { CYBORG_DEFAULT__STATE_PATH: '/data' } }).database.connection,
      'sqlite:////data/cyborg.sqlite',
    )
  })

  void test('unknown references and cycles are errors', () => {
    rejects(
      { env: { CYBORG_DEFAULT__HOST: '$nope' } },
      'CYBORG_DEFAULT__HOST: [DEFAULT] host = "$nope": unknown reference $nope (write $$ for a literal $)',
    )
    rejects(
      { env: { CYBORG_DEFAULT__HOST: '$state_path', CYBORG_DEFAULT__STATE_PATH: '/x/$host' } },
      /^CYBORG_DEFAULT__HOST: \[DEFAULT\] host = "\$state_path": circular \$-reference \[DEFAULT\] host -> \[DEFAULT\] state_path -> \[DEFAULT\] host$/,
    )
  })

  void test('a secret with an unknown reference does not leak the reference', () => {
    rejects(
      { env: { CYBORG_NOVA__PASSWORD: 'pa$word' } },
      'CYBORG_NOVA__PASSWORD: [nova] password = "***": an unknown $-reference (write $$ for a literal $)',
    )
  })
})

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
      { env: { CYBORG_PLACEMENT__AUTH_TYPE: 'token' } },
      /\[placement\] auth_type = "token": expected one of none, admin_token, password$/,
    )
    rejects(
      { env: { CYBORG_DEFAULT__STATE_PATH: ' ' } },
      /\[DEFAULT\] state_path = " ": expected a non-empty path$/,
    )
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
      `${p}:2: [database] connection = "mysqlx://cyborg:***@db/cyborg": expected sqlite:///path, postgresql://user:pass@host:port/db or mysql+pymysql://user:pass@host:port/db`,
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
    const s = file('[DEFAULT]\nhost = x\n\n[oslo_messaging_rabbit]\n')
    rejects(
      { files: [s] },
      `${s}:4: [oslo_messaging_rabbit]: unknown section; expected one of DEFAULT, api, database, agent, pci, gpu_devices, nic_devices, conductor, placement, glance, nova, service_user, keystone_authtoken, oslo_policy, ssl`,
    )
    const o = file('[api]\nprot = 1\n')
    rejects({ files: [o] }, `${o}:2: [api] prot: unknown option; did you mean port?`)
    const w = file('[conductor]\nsecret_sauce = 1\n')
    rejects(
      { files: [w] },
      `${w}:2: [conductor] secret_sauce: unknown option; options of [conductor] are save_interval_ms, max_batch`,
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
    rejects(
      { files: [join(dir, 'missing.conf')] },
      `${join(dir, 'missing.conf')}: cannot read config file: ENOENT`,
    )
  })

  void test('keystoneauth options that need company', () => {
    rejects(
      {
        env: {
          CYBORG_PLACEMENT__AUTH_TYPE: 'password',
          CYBORG_PLACEMENT__AUTH_URL: 'http://ks:5000/v3',
        },
      },
      'CYBORG_PLACEMENT__AUTH_TYPE: [placement] auth_type = "password": expected auth_url, username, password to be set in [placement] too (missing: username, password)',
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

void describe('the result', () => {
  void test('is deeply frozen', () => {
    const c = load()
    assert.ok(Object.isFrozen(c))
    assert.ok(Object.isFrozen(c.api))
    assert.ok(Object.isFrozen(c.agent.enabled_drivers))
    assert.throws(() => {
      ;(c.api as { port: number }).port = 1
    }, TypeError)
    assert.throws(() => {
      ;(c.agent.enabled_drivers as string[]).push('x')
    }, TypeError)
  })

  void test('each load is independent (no global state)', () => {
    const a = load({ env: { CYBORG_API__PORT: '1111' } })
    const b = load()
    assert.equal(a.api.port, 1111)
    assert.equal(b.api.port, 6666)
  })

  void test('redactConfig masks secrets and URL passwords', () => {
    const c = load({
      env: {
        CYBORG_PLACEMENT__PASSWORD: 'pw1',
        CYBORG_KEYSTONE_AUTHTOKEN__PASSWORD: 'pw2',
        CYBORG_DATABASE__CONNECTION: 'postgresql://cyborg:pw3@db/cyborg',
        CYBORG_DEFAULT__TRANSPORT_URL: 'rabbit://guest:pw4@mq:5672/',
      },
    })
    const text = JSON.stringify(redactConfig(c))
    for (const s of ['pw1', 'pw2', 'pw3', 'pw4'])
      assert.ok(!text.includes(s), `${s} leaked: ${text}`)
    const r = redactConfig(c)
    assert.equal(r.placement?.password, '***')
    assert.equal(r.database?.connection, 'postgresql://cyborg:***@db/cyborg')
    assert.equal(r.api?.port, 6666)
  })
})
