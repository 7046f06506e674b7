import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { configFiles, loadConfig, optionSource, redactConfig } from './config.js'
import { file, load, rejects } from '../../test/support/config.js'
void describe('defaults', () => {
  void test('without files or env, every option has its built-in default', () => {
    const c = load()
    assert.equal(c.DEFAULT.host, 'node-1')
    assert.equal(c.DEFAULT.state_path, '/srv/cyborg/.cyborg')
    assert.equal(c.DEFAULT.transport_url, '')
    assert.equal(c.DEFAULT.periodic_interval, 60)
    assert.equal(c.DEFAULT.bind_timeout, 60)
    assert.equal(c.DEFAULT.service_down_time, 60)
    assert.equal(c.DEFAULT.debug, false)
    assert.deepEqual(c.api, {
      host_ip: '127.0.0.1',
      port: 6666,
      public_endpoint: undefined,
      trusted_proxies: ['127.0.0.1', '::1'],
      api_workers: undefined,
      max_arqs_per_request: 64,
      fleet_cache_ms: 0,
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
      report_interval: 10,
      enabled_drivers: ['fake'],
      resource_provider_name: undefined,
      host_root: '/',
      auto_activate: false,
    })
    assert.deepEqual(c.conductor, {
      save_interval_ms: 2,
      max_batch: 64,
      health_recovery_reports: 2,
      clean_retry_interval: 60,
      clean_placement_hold_ms: 1000,
      reconfigure_timeout: 2400,
    })
    assert.equal(c.nvidia_gpu.ecc_uncorrectable_failed, undefined, "unset: the driver's default")
    assert.equal(c.placement.auth_type, 'none')
    assert.equal(c.placement.password, undefined)
    // Signed images are verified when signed; unsigned ones pass; no CA bundle, no Barbican.
    assert.equal(c.glance.verify_image_signatures, true)
    assert.equal(c.glance.require_signed_images, false)
    assert.equal(c.glance.trusted_ca_file, undefined)
    assert.equal(c.barbican.auth_type, 'none')
    assert.equal(c.barbican.timeout, 30)
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
      // A Galera cluster's nodes in order (issue 30)
      'mysql+pymysql://cyborg:pw@db1:3306,db2:3306,[::1]:3307/cyborg',
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

  void test('[oslo_messaging_rabbit] rabbit_quorum_queue: off by default, a boolean (issue 30)', () => {
    assert.deepEqual(load().oslo_messaging_rabbit, { rabbit_quorum_queue: false })
    const p = file(
      '[DEFAULT]\ntransport_url = rabbit://u:p@h1:5672,u:p@h2:5672,u:p@h3:5672/\n' +
        '[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n',
    )
    assert.equal(load({ files: [p] }).oslo_messaging_rabbit.rabbit_quorum_queue, true)
    const env = { CYBORG_OSLO_MESSAGING_RABBIT__RABBIT_QUORUM_QUEUE: 'no' }
    assert.equal(load({ files: [p], env }).oslo_messaging_rabbit.rabbit_quorum_queue, false)
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
