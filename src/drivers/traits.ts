/**
 * Placement trait and attribute helpers shared by the hardware drivers.
 *
 * Placement accepts trait names matching `^[A-Z0-9_]+$` of at most 255 characters; custom traits
 * start with `CUSTOM_` (placement api-ref, "Traits"). Trait names are part of operators' device
 * profiles, so every trait a driver emits is documented in docs/drivers.md and must not change.
 */

import { isValidTrait } from '../domain/placement.js'

export { isValidTrait, OWNER_CYBORG, TRAIT_MAX_LENGTH, TRAIT_PATTERN } from '../domain/placement.js'

/**
 * Turns free text into a trait-name segment: upper case, every run of characters outside
 * `[A-Z0-9]` becomes one `_`, leading and trailing `_` dropped (`"A100-4C"` → `A100_4C`).
 * Returns `''` when nothing is left.
 */
export function traitSegment(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
}

/**
 * Vendor names used in traits, by lower-case 4-digit PCI vendor id (from the PCI-SIG vendor list
 * as published in pci.ids). A vendor not listed here is named by its upper-case hex id instead.
 * Entries may be added; existing entries must never change (they are in operators' profiles).
 */
export const PCI_VENDOR_NAMES: Readonly<Record<string, string>> = {
  '1002': 'AMD',
  '102b': 'MATROX',
  '10de': 'NVIDIA',
  '10ee': 'XILINX',
  '1172': 'ALTERA',
  '144d': 'SAMSUNG',
  '1344': 'MICRON',
  '15b3': 'MELLANOX',
  '15b7': 'SANDISK',
  '1179': 'TOSHIBA',
  '19e5': 'HUAWEI',
  '1bd4': 'INSPUR',
  '1c5c': 'SK_HYNIX',
  '1e0f': 'KIOXIA',
  '8086': 'INTEL',
}

/** The vendor segment of a trait: a known name (`NVIDIA`) or the upper-case hex id (`1D0F`). */
export function vendorTraitName(vendorId: string): string {
  const id = vendorId.toLowerCase()
  return PCI_VENDOR_NAMES[id] ?? traitSegment(id)
}

/**
 * A deployable's attribute list: `rc` first, then `trait0`, `trait1`, … in the given order,
 * keeping only valid traits and dropping duplicates.
 */
export function rcAndTraits(
  resourceClass: string,
  traits: readonly string[],
): { key: string; value: string }[] {
  const seen = new Set<string>()
  const out = [{ key: 'rc', value: resourceClass }]
  for (const t of traits) {
    if (!isValidTrait(t) || seen.has(t)) continue
    seen.add(t)
    out.push({ key: `trait${seen.size - 1}`, value: t })
  }
  return out
}
