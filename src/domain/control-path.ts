/** A control path's canonical JSON (`devices.cpid_info`) as people write it: `dddd:bb:dd.f`. */
export function controlPathText(key: string): string {
  try {
    const info = JSON.parse(key) as Record<string, unknown>
    const { domain, bus, device, function: fn } = info
    if ([domain, bus, device, fn].every((p) => typeof p === 'string'))
      return `${String(domain)}:${String(bus)}:${String(device)}.${String(fn)}`
    return Object.values(info).map(String).join(':')
  } catch {
    return key
  }
}
