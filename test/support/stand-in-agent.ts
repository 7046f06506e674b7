/**
 * A stand-in for a host's agent on a bus, for hosts reported straight to the conductor (vfio-pci,
 * mdevs and real drivers cannot run here): it serves the methods given and fails every other one
 * by name, so that a test or bench sees at once when a flow needs more of the agent than it offers.
 */
import type { MessageBus, Subscription } from '../../src/bus/bus.js'
import { serveAgent, type AgentRpc } from '../../src/rpc/agent-rpc.js'

export function serveStandInAgent(
  bus: MessageBus,
  host: string,
  methods: Partial<AgentRpc>,
): Promise<Subscription> {
  const agent = new Proxy(methods, {
    get: (target, method) =>
      typeof method === 'string' && Object.hasOwn(target, method)
        ? target[method as keyof AgentRpc]
        : () => Promise.reject(new Error(`the stand-in agent does not serve ${String(method)}`)),
  })
  return serveAgent(bus, host, agent as AgentRpc)
}
