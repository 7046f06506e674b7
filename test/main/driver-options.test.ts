/** Driver options come from their cyborg.conf sections ([pci], [gpu_devices], [nic_devices]). */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/config.js'
import { agentOptions } from '../../src/main/resources.js'

function configFrom(text: string) {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-drvopt-'))
  try {
    const file = join(dir, 'cyborg.conf')
    writeFileSync(file, text)
    return { config: loadConfig({ files: [file], env: {} }), file }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('each driver gets its section as options', () => {
  const { config } = configFrom(
    [
      '[agent]',
      'enabled_drivers = pci, nvidia-gpu, intel-nic',
      '[pci]',
      'device_spec = [{"vendor_id": "10de", "product_id": "1eb8"}, {"address": "*:0a:00.*", "physical_network": "physnet1"}]',
      '[gpu_devices]',
      'enabled_vgpu_types = nvidia-471, nvidia-472',
      '[nic_devices]',
      'physical_device_mappings = physnet1:eth2|eth3',
      '',
    ].join('\n'),
  )
  const options = agentOptions(config)
  assert.deepEqual(options.enabledDrivers, ['pci', 'nvidia-gpu', 'intel-nic'])
  assert.deepEqual(options.driverOptions, {
    pci: {
      device_spec:
        '[{"vendor_id": "10de", "product_id": "1eb8"}, {"address": "*:0a:00.*", "physical_network": "physnet1"}]',
    },
    'nvidia-gpu': { vgpu_types: 'nvidia-471,nvidia-472' },
    'intel-nic': { physical_device_mappings: 'physnet1:eth2|eth3' },
  })
})

test('defaults: no device_spec (pci offers nothing), every vGPU type, no NIC port', () => {
  const { config } = configFrom('[agent]\nenabled_drivers = fake\n')
  assert.deepEqual(agentOptions(config).driverOptions, {
    pci: { device_spec: '' },
    'nvidia-gpu': { vgpu_types: '*' },
    'intel-nic': {},
  })
})

test('a malformed device_spec is a one-line config error naming [pci] device_spec', () => {
  const { config, file } = configFrom('[pci]\ndevice_spec = {"vendor_id": 10de}\n')
  assert.throws(
    () => agentOptions(config),
    (err: Error) => {
      assert.equal(err.name, 'ConfigError')
      assert.ok(err.message.startsWith(`${file}:2: [pci] device_spec = `), err.message)
      assert.doesNotMatch(err.message, /\n/)
      return true
    },
  )
})

test('a misspelt device_spec key is refused rather than matching every device', () => {
  const { config } = configFrom('[pci]\ndevice_spec = {"vendor": "10de"}\n')
  assert.throws(() => agentOptions(config), /\[pci\] device_spec = .*unknown key "vendor"/)
})

test('health thresholds come from the section named after each driver', () => {
  const { config } = configFrom(
    [
      '[pci]',
      'link_check = off',
      '[nvidia_gpu]',
      'ecc_uncorrectable_failed = 4',
      'retired_pages_pending = failed',
      '[nvme_ssd]',
      'smart_log = false',
      '[intel_fpga]',
      'opae_errors = degraded',
      '',
    ].join('\n'),
  )
  const options = agentOptions(config).driverOptions!
  assert.deepEqual(options.pci, { device_spec: '', link_check: 'off' })
  assert.deepEqual(options['nvidia-gpu'], {
    vgpu_types: '*',
    ecc_uncorrectable_failed: '4',
    retired_pages_pending: 'failed',
  })
  assert.deepEqual(options['nvme-ssd'], { smart_log: 'false' })
  assert.deepEqual(options['intel-fpga'], { opae_errors: 'degraded' })
})

test('a bad threshold is a one-line config error naming its section, option and line', () => {
  const { config, file } = configFrom('[nvidia_gpu]\n\necc_uncorrectable_failed = many\n')
  assert.throws(
    () => agentOptions(config),
    (err: Error) => {
      assert.equal(err.name, 'ConfigError')
      assert.ok(
        err.message.startsWith(`${file}:3: [nvidia_gpu] ecc_uncorrectable_failed = `),
        err.message,
      )
      assert.match(err.message, /non-negative integer/)
      return true
    },
  )
  const { config: env } = {
    config: loadConfig({ files: [], env: { CYBORG_INTEL_QAT__LINK_CHECK: 'sometimes' } }),
  }
  assert.throws(() => agentOptions(env), /\[intel_qat\] link_check.*speed-and-width, width, off/)
})
