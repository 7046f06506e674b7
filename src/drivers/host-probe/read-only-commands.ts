/**
 * Which commands the drivers run are reads (docs/drivers.md, "What the agent sees"): a table of
 * the tools, each with the argument forms that only query. Anything else, a tool not in the table
 * included, may change the host (reset a GPU, erase a drive, flash an FPGA) and is refused by the
 * read-only probe (read-only-host-probe.ts). The table errs on the side of refusing.
 */

/** Decides whether one tool's argument list only reads. */
type ArgsRule = (args: readonly string[]) => boolean

/** nvidia-smi options that change a GPU, or write a file (`-f`). */
const NVIDIA_SMI_WRITES = new Set([
  '-r',
  '--gpu-reset',
  '-pm',
  '--persistence-mode',
  '-e',
  '--ecc-config',
  '-p',
  '--reset-ecc-errors',
  '-c',
  '--compute-mode',
  '-mig',
  '--multi-instance-gpu',
  '-pl',
  '--power-limit',
  '-ac',
  '--applications-clocks',
  '-rac',
  '--reset-applications-clocks',
  '-lgc',
  '--lock-gpu-clocks',
  '-rgc',
  '--reset-gpu-clocks',
  '-lmc',
  '--lock-memory-clocks',
  '-rmc',
  '--reset-memory-clocks',
  '-am',
  '--accounting-mode',
  '-caa',
  '--clear-accounted-apps',
  '-f',
  '--filename',
])

/** nvme-cli subcommands that only read a controller (logs, identify, listings). */
const NVME_READS = new Set([
  'list',
  'list-subsys',
  'list-ns',
  'id-ctrl',
  'id-ns',
  'smart-log',
  'error-log',
  'fw-log',
  'sanitize-log',
  'version',
])

/** OPAE fpgainfo subcommands: queries, unless asked to clear (`errors --clear`). */
const FPGAINFO_READS = new Set(['fme', 'port', 'temp', 'power', 'errors', 'bmc', 'mac', 'phy'])

const RULES: Readonly<Record<string, ArgsRule>> = {
  // Lists PCI functions; it reads config space and never writes it (setpci does).
  lspci: () => true,
  // Queries only: -q / -L / --query-* (and none of NVIDIA_SMI_WRITES, checked below).
  'nvidia-smi': (args) =>
    ['-q', '--query', '-L', '--list-gpus'].includes(args[0] ?? '') ||
    (args[0] ?? '').startsWith('--query-'),
  nvme: (args) => NVME_READS.has(args[0] ?? ''),
  fpgainfo: (args) =>
    FPGAINFO_READS.has(args[0] ?? '') && !args.some((a) => a === '--clear' || a === '-c'),
  // XRT: `examine` reports; `program`, `reset` and `configure` change the card.
  xbutil: (args) => args[0] === 'examine',
  xbmgmt: (args) => args[0] === 'examine',
}

/** The tools with a read-only form, by name (fpgaconf, which only flashes, is not one). */
export const READ_ONLY_TOOLS: readonly string[] = Object.keys(RULES)

/**
 * True when `command args` only reads the host. The command is matched by its base name
 * (`/opt/xilinx/xrt/bin/xbmgmt` is `xbmgmt`); a tool outside the table is never read-only.
 */
export function isReadOnlyCommand(command: string, args: readonly string[]): boolean {
  const tool = command.slice(command.lastIndexOf('/') + 1)
  const rule = Object.hasOwn(RULES, tool) ? RULES[tool] : undefined
  if (rule === undefined) return false
  // nvidia-smi's -q form may still carry a write option after it (`-q -f out.txt`).
  if (tool === 'nvidia-smi' && args.some((a) => NVIDIA_SMI_WRITES.has(a))) return false
  return rule(args)
}
