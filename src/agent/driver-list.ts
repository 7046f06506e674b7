/**
 * AgentRpc 1.4 `listDrivers`: every configured driver of this agent with its runtime state (enabled
 * or not, from driver-admin.ts) and the outcome of its last discovery since the agent started.
 * Drivers have no version of their own: they ship with Cyborg, so the agent's version stands for it.
 */
import type { AgentDriverInfo } from '../rpc/agent-rpc.js'

/** One driver's run in a discovery (the agent's DriverState, structurally). */
export interface DriverRunState {
  driver: string
  ok: boolean
  deviceCount: number
  /** ISO time of the discovery. */
  at: string
  error?: { code: string; message: string }
}

export interface DriverListingDeps {
  host: string
  /** Version reported for every driver (the package version). */
  version: string
  /** The configured drivers, in order. */
  names: readonly string[]
  /** Accepted aliases of driver names (the registry's), alias → name. */
  aliases: Readonly<Record<string, string>>
  /** The names of the enabled drivers, once the saved settings are loaded. */
  enabled: () => Promise<readonly string[]>
}

export interface DriverListing {
  /** Called after every discovery with the runs of the drivers that took part. */
  record(runs: readonly DriverRunState[]): void
  listDrivers(): Promise<{ host: string; drivers: AgentDriverInfo[] }>
}

export function createDriverListing(deps: DriverListingDeps): DriverListing {
  let last = new Map<string, DriverRunState>()
  const aliasesOf = (name: string) =>
    Object.entries(deps.aliases)
      .filter(([, target]) => target === name)
      .map(([alias]) => alias)

  return {
    record(runs) {
      // A driver that did not run (disabled) has no last discovery any more.
      last = new Map(runs.map((r) => [r.driver, r]))
    },
    async listDrivers() {
      const enabled = new Set(await deps.enabled())
      const drivers = deps.names.map((name): AgentDriverInfo => {
        const run = enabled.has(name) ? last.get(name) : undefined
        return {
          name,
          aliases: aliasesOf(name),
          version: deps.version,
          enabled: enabled.has(name),
          deviceCount: run?.ok ? run.deviceCount : 0,
          lastDiscovery: run
            ? { at: run.at, ok: run.ok, ...(run.error ? { error: { ...run.error } } : {}) }
            : null,
        }
      })
      return { host: deps.host, drivers }
    },
  }
}
