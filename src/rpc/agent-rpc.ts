/** The agent's RPC contract, one topic per host: `cyborg.agent.<host>`. */
import type { MessageBus } from '../bus/bus.js'
import { createRpcClient, pickMethods, serveRpc, type RpcClientOptions } from './rpc.js'
import type { InventoryReportResult } from './conductor-rpc.js'

export const AGENT_RPC_VERSION = '1.0'
export const agentTopic = (host: string) => `cyborg.agent.${host}`

export interface AgentRpc {
  /** Discover now and report; resolves with the conductor's answer. */
  discover(req: Record<string, never>): Promise<InventoryReportResult>
}

export function createAgentClient(bus: MessageBus, host: string, options: RpcClientOptions = {}): AgentRpc {
  return createRpcClient<AgentRpc & Record<string, never>>(bus, agentTopic(host), AGENT_RPC_VERSION, options)
}

/** Serves `impl` on the host's agent topic; only the contract's methods are reachable. */
export function serveAgent(bus: MessageBus, host: string, impl: AgentRpc) {
  const methods = Object.keys({ discover: true } satisfies Record<keyof AgentRpc, true>) as (keyof AgentRpc)[]
  return serveRpc(bus, agentTopic(host), AGENT_RPC_VERSION, pickMethods(impl, methods))
}
