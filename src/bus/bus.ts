/**
 * The MessageBus port. Two implementations keep it honest: in-process (embedded mode) and
 * RabbitMQ (scale-out). Payloads must be JSON-serialisable: the in-process bus round-trips them
 * through JSON too, so nothing works embedded that would break over the wire.
 */

/**
 * A message this process put on the broker (`sent`) or took from it (`received`), by kind: a call's
 * request, a cast, a fanout publish, or a call's reply (RabbitMQ bus: cyborg_bus_messages_total).
 */
export type BusMessageKind = 'call' | 'cast' | 'publish' | 'reply'
export type BusMessageCounter = (direction: 'sent' | 'received', kind: BusMessageKind) => void

/** Handles one RPC request; a thrown AppError reaches the caller as the same class and code. */
export type RpcHandler = (method: string, payload: unknown) => Promise<unknown>

/** Receives one fanout message. */
export type MessageHandler = (message: unknown) => void | Promise<void>

export interface Subscription {
  /** Stop receiving. Idempotent. */
  unsubscribe(): Promise<void>
}

export interface CallOptions {
  /** Fails with TimeoutError when no reply arrives in time. @default 30000 */
  timeoutMs?: number
  signal?: AbortSignal
}

/** What {@link MessageBus.status} reports: whether this process can reach the bus right now. */
export interface BusStatus {
  /** `up`: messages go out now; `connecting`: the connection is lost and being made again; `closed`: close() was called. */
  state: 'up' | 'connecting' | 'closed'
  /** For people: the broker it is connected to, or since when and why it is not. */
  detail: string
}

export interface MessageBus {
  /** Request/reply to one server of `topic` (competing consumers share the work). */
  call(topic: string, method: string, payload: unknown, options?: CallOptions): Promise<unknown>
  /** Fire-and-forget to one server of `topic`. Resolves once the bus accepted the message. */
  cast(topic: string, method: string, payload: unknown): Promise<void>
  /** Serve RPCs on `topic`. Several servers of one topic compete for requests. */
  serve(topic: string, handler: RpcHandler): Promise<Subscription>
  /** Fanout: every current subscriber of `topic` gets the message. Never stored. */
  publish(topic: string, message: unknown): Promise<void>
  subscribe(topic: string, handler: MessageHandler): Promise<Subscription>
  /** Stop serving and close connections; pending calls fail with UnavailableError. */
  close(): Promise<void>
  /**
   * The connection's state now, without I/O (the API's /healthcheck polls it). Optional: a bus
   * without it counts as up.
   */
  status?(): BusStatus
}
