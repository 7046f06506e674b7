/**
 * The vendor half of an Intel PAC's health (issue 15): the error registers that the FPGA driver
 * shows in sysfs, below the card's PF (`/sys/bus/pci/devices/<pf>/`), in both layouts that
 * intel-fpga.ts reads:
 *
 * - upstream DFL (Linux Documentation/ABI/testing/sysfs-platform-dfl-fme and
 *   sysfs-platform-dfl-port): `fpga_region/region<N>/dfl-fme.<M>/errors/{fme_errors,
 *   pcie0_errors, pcie1_errors, nonfatal_errors, catfatal_errors, first_error, next_error}` and
 *   `fpga_region/region<N>/dfl-port.<M>/errors/{errors, first_error}`;
 * - the out-of-tree OPAE intel-fpga driver (the files OPAE's fpgad watches, opae-sdk
 *   tools/fpgad/errtable.c): `fpga/intel-fpga-dev.<N>/intel-fpga-fme.<M>/errors/{pcie0_errors,
 *   pcie1_errors, gbs_errors, bbs_errors, fme-errors/{errors, first_error, next_error}}` and
 *   `intel-fpga-port.<M>/errors/{errors, first_error}`.
 *
 * Each register is printed as hex (`0x0` when clean) and is sticky: it stays set until an operator
 * clears it (writes the value back, or OPAE `fpgainfo errors all -c`). A non-zero register
 * gives the option `opae_errors` (`failed` by default, `degraded`, or `off`); a register that is
 * there but cannot be read or parsed is `unknown`. `first_error` and `next_error` only add detail.
 */
import type { HostProbe } from '../driver.js'
import type { ReportedHealth } from '../../domain/inventory/inventory.js'
import { choiceOption, worstHealth } from '../health.js'
import { readDirOptional, readOptional } from '../pci/pci-sysfs.js'

/** What a non-zero error register makes the card. */
export type OpaeErrorsLevel = 'failed' | 'degraded' | 'off'

/** The FPGA health option of the `intel-fpga` driver (a string, from config). */
export interface OpaeHealthOptions {
  /** `failed`, `degraded` or `off`: what a non-zero FME or port error register makes the card. @default 'failed' */
  opae_errors?: string
}

/**
 * The `opae_errors` option.
 * @throws ConfigError naming the driver and the option
 */
export function opaeErrorsLevel(
  driver: string,
  given: Readonly<OpaeHealthOptions>,
): OpaeErrorsLevel {
  const options = given as Readonly<Record<string, string | undefined>>
  return choiceOption(driver, options, 'opae_errors', ['failed', 'degraded', 'off'], 'failed')
}

/** A feature device of the FPGA driver below a PF: the management engine (FME) or a port. */
export interface FpgaNode {
  kind: 'fme' | 'port'
  layout: 'dfl' | 'opae'
  /** Its sysfs directory. */
  path: string
}

/** Lists `dir`'s entries matching `re`, as full paths, sorted. */
async function children(host: HostProbe, dir: string, re: RegExp): Promise<string[]> {
  return (await readDirOptional(host, dir))
    .filter((n) => re.test(n))
    .sort()
    .map((n) => `${dir}/${n}`)
}

/** The FMEs and ports below the PF directory `pfDir`, in both layouts (DFL first). */
export async function listFpgaNodes(host: HostProbe, pfDir: string): Promise<FpgaNode[]> {
  const nodes: FpgaNode[] = []
  for (const region of await children(host, `${pfDir}/fpga_region`, /^region\d+$/)) {
    for (const path of await children(host, region, /^dfl-fme\.\d+$/))
      nodes.push({ kind: 'fme', layout: 'dfl', path })
    for (const path of await children(host, region, /^dfl-port\.\d+$/))
      nodes.push({ kind: 'port', layout: 'dfl', path })
  }
  for (const dev of await children(host, `${pfDir}/fpga`, /^intel-fpga-dev\.\d+$/)) {
    for (const path of await children(host, dev, /^intel-fpga-fme\.\d+$/))
      nodes.push({ kind: 'fme', layout: 'opae', path })
    for (const path of await children(host, dev, /^intel-fpga-port\.\d+$/))
      nodes.push({ kind: 'port', layout: 'opae', path })
  }
  return nodes
}

/** The error registers of each kind of node, relative to its `errors/` directory, in reason order. */
export const OPAE_ERROR_REGISTERS: Readonly<Record<FpgaNode['kind'], readonly string[]>> = {
  fme: [
    'catfatal_errors',
    'bbs_errors',
    'nonfatal_errors',
    'gbs_errors',
    'fme_errors',
    'fme-errors/errors',
    'pcie0_errors',
    'pcie1_errors',
  ],
  port: ['errors'],
}

/** The registers that say which error came first and next (detail only). */
const FIRST_ERROR = ['first_error', 'fme-errors/first_error']
const NEXT_ERROR = ['next_error', 'fme-errors/next_error']

/** An error register (`0x0`, `0x40`; a bare decimal is tolerated); undefined for anything else. */
export function parseErrorRegister(text: string): bigint | undefined {
  const t = text.trim()
  if (/^0x[0-9a-f]{1,32}$/i.test(t) || /^\d{1,20}$/.test(t)) return BigInt(t)
  return undefined
}

/** At most 150 characters, so that a card's reasons fit `health_reason` (255) together. */
const clip = (text: string): string => (text.length > 150 ? `${text.slice(0, 149)}…` : text)

/** `0x…` in lower case. */
const hex = (v: bigint): string => `0x${v.toString(16)}`

/** What one node's `errors/` directory shows. A register there but unreadable is `null`. */
export interface OpaeErrorReading {
  kind: FpgaNode['kind']
  registers: { name: string; value: bigint | null }[]
  firstError?: bigint
  nextError?: bigint
}

/** Reads a register: its value, `null` if it is there but unreadable, undefined if absent. */
async function readRegister(host: HostProbe, path: string): Promise<bigint | null | undefined> {
  const text = await readOptional(host, path)
  if (text !== undefined) return parseErrorRegister(text) ?? null
  return (await host.exists(path).catch(() => false)) ? null : undefined
}

/** The first readable non-zero value of `names` (detail registers; unreadable ones are skipped). */
async function readDetail(
  host: HostProbe,
  dir: string,
  names: readonly string[],
): Promise<bigint | undefined> {
  for (const name of names) {
    const v = await readRegister(host, `${dir}/${name}`)
    if (typeof v === 'bigint' && v !== 0n) return v
  }
  return undefined
}

/** Reads a node's error registers; undefined when it has no `errors/` directory. */
export async function readOpaeErrors(
  host: HostProbe,
  node: FpgaNode,
): Promise<OpaeErrorReading | undefined> {
  const dir = `${node.path}/errors`
  if (!(await host.exists(dir).catch(() => false))) return undefined
  const registers: OpaeErrorReading['registers'] = []
  for (const name of OPAE_ERROR_REGISTERS[node.kind]) {
    const value = await readRegister(host, `${dir}/${name}`)
    if (value !== undefined) registers.push({ name, value })
  }
  const reading: OpaeErrorReading = { kind: node.kind, registers }
  const first = await readDetail(host, dir, FIRST_ERROR)
  if (first !== undefined) reading.firstError = first
  if (node.kind === 'fme') {
    const next = await readDetail(host, dir, NEXT_ERROR)
    if (next !== undefined) reading.nextError = next
  }
  return reading
}

/**
 * Judges the readings of one card (pure); undefined when clean or when `level` is `off`. A node with
 * non-zero registers gives one finding, e.g. `FPGA port errors 0x2 (first error 0x2)` or
 * `FPGA FME catfatal_errors 0x800, pcie0_errors 0x4 (first error 0x800)`; an unreadable register
 * gives `unknown` (`FPGA FME pcie0_errors unreadable`).
 */
export function judgeOpaeErrors(
  readings: readonly OpaeErrorReading[],
  level: OpaeErrorsLevel,
): ReportedHealth | undefined {
  if (level === 'off') return undefined
  const findings: ReportedHealth[] = []
  for (const r of readings) {
    const who = r.kind === 'fme' ? 'FPGA FME' : 'FPGA port'
    const unreadable = r.registers.filter((x) => x.value === null).map((x) => x.name)
    if (unreadable.length > 0)
      findings.push({ state: 'unknown', reason: `${who} ${unreadable.join(', ')} unreadable` })
    const set = r.registers.filter((x): x is { name: string; value: bigint } => !!x.value)
    if (set.length === 0) continue
    const detail = [
      r.firstError === undefined ? undefined : `first error ${hex(r.firstError)}`,
      r.nextError === undefined ? undefined : `next error ${hex(r.nextError)}`,
    ].filter((d) => d !== undefined)
    const list = set.map((x) => `${x.name} ${hex(x.value)}`).join(', ')
    const reason = `${who} ${list}${detail.length > 0 ? ` (${detail.join(', ')})` : ''}`
    findings.push({ state: level, reason: clip(reason) })
  }
  return worstHealth(findings)
}

/** Reads and judges the FPGA error registers of the card whose PF directory is `pfDir`. */
export async function opaeHealth(
  host: HostProbe,
  pfDir: string,
  level: OpaeErrorsLevel,
): Promise<ReportedHealth | undefined> {
  if (level === 'off') return undefined
  const readings: OpaeErrorReading[] = []
  for (const node of await listFpgaNodes(host, pfDir)) {
    const r = await readOpaeErrors(host, node)
    if (r !== undefined) readings.push(r)
  }
  return judgeOpaeErrors(readings, level)
}
