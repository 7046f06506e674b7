/**
 * A host's fully qualified name, as Python's socket.getfqdn() finds it (the default name of the
 * compute node provider in Placement, like OpenStack Cyborg's): resolve the host name, then ask
 * the resolver for the address's canonical name; the plain host name when that has no dot or the
 * resolver does not answer within 2 s.
 */
import { promises as dns } from 'node:dns'
import { hostname } from 'node:os'

export async function fullyQualifiedName(name = hostname(), timeoutMs = 2000): Promise<string> {
  const lookup = async () => {
    const { address } = await dns.lookup(name)
    const { hostname: canonical } = await dns.lookupService(address, 0)
    return canonical.includes('.') ? canonical : name
  }
  const timeout = new Promise<string>((resolve) =>
    setTimeout(() => resolve(name), timeoutMs).unref(),
  )
  return Promise.race([lookup().catch(() => name), timeout])
}
