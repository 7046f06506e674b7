/**
 * Typed RPC over the MessageBus: a contract is an interface of async methods that each take one
 * JSON payload. The client is a proxy that sends `{version, payload}`; the server checks the major
 * version and dispatches to the implementation by method name.
 */
import type { CallOptions, MessageBus, Subscription } from '../bus/bus.js'
import { InvalidInputError, NotFoundError } from '../domain/errors.js'
import { secondsSince, type Metrics } from '../domain/metrics.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type RpcContract = { [method: string]: (payload: any) => Promise<unknown> }

export interface RpcEnvelope {
  /** `major.minor`; a server refuses a different major. */
  version: string
  payload: unknown
}

export interface RpcClientOptions extends CallOptions {
  /** Methods sent with `cast` (no reply awaited); they resolve to undefined. */
  castMethods?: readonly string[]
}

/** A client for `contract` on `topic`, e.g. `createRpcClient<ConductorRpc>(bus, 'conductor', '1.0')`. */
export function createRpcClient<C extends RpcContract>(
  bus: MessageBus,
  topic: string,
  version: string,
  options: RpcClientOptions = {},
): C {
  const { castMethods = [], ...callOptions } = options
  return new Proxy({} as C, {
    get(_target, method) {
      if (typeof method !== 'string' || method === 'then') return undefined
      return async (payload: unknown) => {
        const envelope: RpcEnvelope = { version, payload }
        if (castMethods.includes(method)) return bus.cast(topic, method, envelope)
        return bus.call(topic, method, envelope, callOptions)
      }
    },
  })
}

/** Counts served calls by method and outcome (`ok`, or the error's code), with their time. */
export interface RpcObserver {
  metrics: Metrics
  /** `conductor` or `agent`: the `service` label. */
  service: string
}

/** Serves `impl` on `topic`. Unknown methods and incompatible versions are refused with an error. */
export function serveRpc<C extends RpcContract>(
  bus: MessageBus,
  topic: string,
  version: string,
  impl: C,
  observer?: RpcObserver,
): Promise<Subscription> {
  const handle = dispatcher(topic, version, impl)
  if (observer === undefined) return bus.serve(topic, handle)
  const { metrics, service } = observer
  return bus.serve(topic, async (method, raw) => {
    const start = performance.now()
    // A method name only when the contract has it, so that a caller cannot add label values.
    const known = Object.hasOwn(impl, method) ? method : 'unknown'
    let outcome = 'ok'
    try {
      return await handle(method, raw)
    } catch (err) {
      outcome =
        (err as { code?: unknown }).code === undefined
          ? 'error'
          : String((err as { code: unknown }).code)
      throw err
    } finally {
      metrics.inc('cyborg_rpc_calls_total', { service, method: known, outcome })
      metrics.observe('cyborg_rpc_call_duration_seconds', secondsSince(start), {
        service,
        method: known,
      })
    }
  })
}

function dispatcher<C extends RpcContract>(topic: string, version: string, impl: C) {
  const major = version.split('.')[0]
  return async (method: string, raw: unknown) => {
    const envelope = raw as Partial<RpcEnvelope> | null
    const theirMajor =
      typeof envelope?.version === 'string' ? envelope.version.split('.')[0] : undefined
    if (theirMajor !== major) {
      throw new InvalidInputError(
        `RPC version ${String(envelope?.version)} is not compatible with ${version}`,
        {
          code: 'RPC_VERSION_MISMATCH',
        },
      )
    }
    // Own methods, or a class's; never Object.prototype's (`constructor`, `toString`, …).
    const proto: unknown = Object.getPrototypeOf(impl)
    const fromClass = proto !== null && proto !== Object.prototype && method in (proto as object)
    const ownOrClass = Object.hasOwn(impl, method) || fromClass
    const fn = ownOrClass ? impl[method] : undefined
    if (typeof fn !== 'function')
      throw new NotFoundError(`no RPC method ${topic}.${method}`, { code: 'RPC_NO_METHOD' })
    return fn.call(impl, envelope?.payload)
  }
}

/**
 * A plain object with only `methods` of `impl`, bound to it: what a server exposes on the bus,
 * so that lifecycle methods (`stop`) and prototype members are never callable remotely.
 */
export function pickMethods<C extends object>(
  impl: C,
  methods: readonly (keyof C & string)[],
): RpcContract {
  const out = Object.create(null) as RpcContract
  for (const name of methods) {
    const fn = impl[name]
    if (typeof fn !== 'function') throw new TypeError(`RPC implementation lacks method ${name}`)
    out[name] = (payload: unknown) => (fn as (p: unknown) => Promise<unknown>).call(impl, payload)
  }
  return out
}
