/**
 * The sections of cyborg.conf that configure the hardware drivers, each named after its driver
 * (`[pci]`, `[nvidia_gpu]`, …) plus Nova's `[gpu_devices]` and Cyborg's `[nic_devices]`: their
 * health thresholds (docs/health.md), cleaning (docs/cleaning.md) and their own options. Part of
 * the one option table (src/config/schema.ts); src/main/driver-options.ts hands them to drivers.
 */
import { list, optionalStr } from './options.js'

/**
 * The PCIe health thresholds every PCI-based driver takes (src/drivers/pci/pci-health.ts, docs/health.md).
 * Unset: the driver's default, so that the defaults live in one place.
 */
function pciHealth(driver: string, linkDefault = 'speed-and-width') {
  const threshold = (what: string, state: string, fallback: number) =>
    optionalStr({
      help: `${driver}: ${what} since boot at which a device is ${state}. Default ${fallback}; 0 turns the check off.`,
    })
  return {
    aer_fatal_failed: threshold('fatal PCIe AER errors', 'failed (fenced)', 1),
    aer_nonfatal_degraded: threshold('non-fatal PCIe AER errors', 'degraded', 1),
    aer_correctable_degraded: threshold('correctable PCIe AER errors', 'degraded', 1000),
    link_check: optionalStr({
      help:
        `${driver}: a PCIe link trained below its capability makes a device degraded: ` +
        `speed-and-width, width (GPUs slow their link when idle), or off. Default ${linkDefault}.`,
    }),
  }
}

/**
 * `clean` and `clean_timeout` of a driver (src/drivers/clean.ts, docs/cleaning.md). Unset: the
 * driver's default, so that the defaults live in one place.
 */
function cleanOptions(driver: string, method: string, timeoutDefault: number) {
  return {
    clean: optionalStr({
      help:
        `${driver}: how a unit is cleaned when its allocation ends, before anyone may claim it ` +
        `again: auto (${method}) or none (not cleaned: the operator's choice, logged and recorded ` +
        `with every release). Default auto.`,
    }),
    clean_timeout: optionalStr({
      help: `${driver}: seconds the clean and its verification may take together; past it the unit is failed and fenced. Default ${timeoutDefault}.`,
    }),
  }
}

export const driverSections = {
  pci: {
    ...pciHealth('pci'),
    ...cleanOptions('pci', 'a function-level reset through sysfs', 60),
    device_spec: optionalStr({
      help:
        "Devices the pci driver offers, in Nova's [pci] device_spec syntax: a JSON object or a " +
        'JSON list of objects with vendor_id, product_id, address (glob or regex dict) and ' +
        'physical_network, e.g. {"vendor_id": "10de", "product_id": "1eb8"}. Unset: the pci ' +
        'driver offers nothing.',
    }),
  },
  gpu_devices: {
    enabled_vgpu_types: list({
      default: ['*'],
      help:
        'mdev types (e.g. nvidia-471) the nvidia-gpu driver offers as VGPU, comma-separated; * ' +
        'offers every type. A GPU with none of them enabled is offered whole (PGPU).',
    }),
  },
  nvidia_gpu: {
    ...pciHealth('nvidia-gpu', 'width'),
    ...cleanOptions(
      'nvidia-gpu',
      'nvidia-smi --gpu-reset of an idle GPU, the mdev removed and created again for a vGPU, a function-level reset without nvidia-smi',
      300,
    ),
    ecc_uncorrectable_failed: optionalStr({
      help: 'nvidia-gpu: volatile uncorrectable ECC errors (nvidia-smi -q -x) at which a GPU is failed. Default 1; 0 turns the check off.',
    }),
    retired_pages_pending: optionalStr({
      help: 'nvidia-gpu: what retired pages pending a GPU reset make a GPU: degraded, failed or off. Default degraded.',
    }),
  },
  nvme_ssd: {
    ...pciHealth('nvme-ssd'),
    ...cleanOptions(
      'nvme-ssd',
      'nvme sanitize when the controller supports it, else nvme format with secure erase',
      3600,
    ),
    smart_log: optionalStr({
      help:
        'nvme-ssd: read `nvme smart-log -o json` (nvme-cli) for critical warnings, media errors ' +
        'and wear: true or false. Default true; the agent needs access to /dev/nvmeN.',
    }),
    media_errors_degraded: optionalStr({
      help: 'nvme-ssd: media errors at which an SSD is degraded. Default 1; 0 turns the check off.',
    }),
    percentage_used_degraded: optionalStr({
      help: 'nvme-ssd: percentage of rated endurance used at which an SSD is degraded. Default 90; 0 turns the check off.',
    }),
    percentage_used_failed: optionalStr({
      help: 'nvme-ssd: percentage of rated endurance used at which an SSD is failed. Default 0 (off): a worn SSD still works.',
    }),
  },
  intel_fpga: {
    ...pciHealth('intel-fpga'),
    ...cleanOptions('intel-fpga', 'the blank_image loaded with fpgaconf', 1800),
    blank_image: optionalStr({
      help:
        'intel-fpga: absolute path on the compute host of the bitstream that cleaning loads (a ' +
        'blank or known-good image). Unset: intel-fpga cards cannot be cleaned (clean refuses, ' +
        'and with clean = auto the unit is fenced).',
    }),
    blank_afu_id: optionalStr({
      help:
        'intel-fpga: the AFU id (32 hex digits, afu_id in sysfs) the blank_image gives; set it so ' +
        'that the clean is verified by reading it back. Unset: verification checks that the card ' +
        'is still present.',
    }),
    opae_errors: optionalStr({
      help: 'intel-fpga: what a non-zero OPAE/DFL error register makes a card: failed, degraded or off. Default failed.',
    }),
  },
  xilinx_fpga: {
    ...pciHealth('xilinx-fpga'),
    ...cleanOptions('xilinx-fpga', 'the blank_image flashed with xbmgmt', 1800),
    blank_image: optionalStr({
      help:
        'xilinx-fpga: absolute path on the compute host of the image that cleaning flashes with ' +
        'xbmgmt program --base (a known-good base image). Unset: xilinx-fpga cards cannot be ' +
        'cleaned.',
    }),
  },
  intel_qat: {
    ...pciHealth('intel-qat'),
    ...cleanOptions('intel-qat', 'a function-level reset through sysfs of the VF', 60),
  },
  intel_nic: {
    ...pciHealth('intel-nic'),
    ...cleanOptions('intel-nic', 'a function-level reset through sysfs of the VF', 60),
  },
  nic_devices: {
    physical_device_mappings: optionalStr({
      help: 'intel-nic: physical networks and the ports on them, physnet:ifname|ifname,… (e.g. physnet1:eth2|eth3). Only ports named here are offered.',
    }),
    function_device_mappings: optionalStr({
      help: 'intel-nic: NIC functions and the ports that have them, FUNCTION:ifname|ifname,… (e.g. GTPV1:eth3).',
    }),
  },
}
