/* global URL, console */
// Adds lock entries for the platform builds of native packages that this registry does not carry.
//
// unrs-resolver (the resolver of eslint-plugin-import-x) lists 21 optional platform builds; the
// registry reachable here serves only the linux ones, so `npm install` leaves the others out of
// package-lock.json and npm 11's `npm ci` then refuses the lock ("Missing: … from lock file").
// An entry with os/cpu/libc is enough: npm skips a build whose platform does not match without
// fetching it. Run after any `npm install` that rewrites the lock: `node scripts/lock-platform-bindings.mjs`.
import { readFileSync, writeFileSync } from 'node:fs'

const lockPath = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(lockPath, 'utf8'))
const owner = lock.packages['node_modules/unrs-resolver']
if (!owner) throw new Error('unrs-resolver is not in package-lock.json')

/** `<os>-<cpu>[-<abi>]` → the package's os/cpu/libc fields. */
function platformOf(suffix) {
  const [os, cpu, abi] = suffix.split('-')
  const cpus = {
    arm: 'arm',
    arm64: 'arm64',
    x64: 'x64',
    ia32: 'ia32',
    loong64: 'loong64',
    ppc64: 'ppc64',
    riscv64: 'riscv64',
    s390x: 's390x',
  }
  const entry = { cpu: [cpus[cpu]], os: [os] }
  if (os === 'linux') entry.libc = [abi?.startsWith('musl') ? 'musl' : 'glibc']
  return entry
}

let added = 0
for (const [name, version] of Object.entries(owner.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`
  if (lock.packages[key]) continue
  const suffix = name.replace('@unrs/resolver-binding-', '')
  const { cpu, os, libc } = platformOf(suffix)
  lock.packages[key] = {
    version,
    cpu,
    dev: true,
    ...(libc ? { libc } : {}),
    license: 'MIT',
    optional: true,
    os,
  }
  added++
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) =>
    a === '' ? -1 : b === '' ? 1 : a.localeCompare(b),
  ),
)
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`added ${added} platform build entries to package-lock.json`)
