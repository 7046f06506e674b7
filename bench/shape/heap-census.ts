/**
 * A census of a V8 heap snapshot (issue 28 part 2.4, what holds the soak's memory): node count and
 * self size by constructor name, and with a second snapshot the growth between them, largest first.
 * Take the snapshots with `bench:soak -- "--node-options=--heapsnapshot-signal=SIGUSR2
 * --diagnostic-dir=DIR"` and `kill -USR2 <pid>` (the pids are in `ps`).
 * Usage: node --import tsx bench/shape/heap-census.ts <first.heapsnapshot> [<second.heapsnapshot>] [--top 25]
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }
  nodes: number[]
  strings: string[]
}

type Census = Map<string, { count: number; bytes: number }>

/** Counts the nodes of a snapshot by "type:name" (objects by constructor, strings as one kind). */
export function census(file: string): Census {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot
  const fields = snap.snapshot.meta.node_fields
  const width = fields.length
  const typeAt = fields.indexOf('type')
  const nameAt = fields.indexOf('name')
  const sizeAt = fields.indexOf('self_size')
  const types = snap.snapshot.meta.node_types[0]
  const out: Census = new Map()
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!] ?? '?'
    const keyed = type === 'object' || type === 'closure' || type === 'native'
    const key = keyed ? `${type}:${snap.strings[snap.nodes[i + nameAt]!]}` : type
    const row = out.get(key) ?? { count: 0, bytes: 0 }
    row.count += 1
    row.bytes += snap.nodes[i + sizeAt]!
    out.set(key, row)
  }
  return out
}

function total(c: Census): { count: number; mb: number } {
  let count = 0
  let bytes = 0
  for (const r of c.values()) {
    count += r.count
    bytes += r.bytes
  }
  return { count, mb: Math.round(bytes / 1e5) / 10 }
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
})
const top = Number(values.top)
const first = census(positionals[0]!)
const second = positionals[1] ? census(positionals[1]) : undefined
const rows = [...(second ?? first).entries()].map(([name, r]) => {
  const was = second ? (first.get(name) ?? { count: 0, bytes: 0 }) : { count: 0, bytes: 0 }
  return {
    name,
    count: r.count,
    kb: Math.round(r.bytes / 1024),
    countGrowth: r.count - was.count,
    kbGrowth: Math.round((r.bytes - was.bytes) / 1024),
  }
})
const bySize = [...rows].sort((a, b) => b.kb - a.kb).slice(0, top)
const byGrowth = second
  ? [...rows].sort((a, b) => b.kbGrowth - a.kbGrowth).slice(0, top)
  : undefined
process.stdout.write(
  `${JSON.stringify({ first: total(first), second: second && total(second), bySize, byGrowth }, null, 1)}\n`,
)
