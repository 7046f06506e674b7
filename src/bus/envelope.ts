/**
 * What crosses the bus: requests and replies as plain JSON, and errors as `{ name, code, message,
 * details }` so that the caller gets back the same AppError subclass (by name) with the same code.
 * An error class the caller does not know becomes a plain AppError that keeps the code.
 */
import { AppError, ERROR_CLASSES } from '../domain/errors.js'

/** An error as it travels. */
export interface SerializedError {
  /** Class name, e.g. `ConflictError`; rehydrated through ERROR_CLASSES. */
  name: string
  /** Stable code, e.g. `CONFLICT`; `INTERNAL_ERROR` for anything that was not an AppError. */
  code: string
  message: string
  details?: Record<string, unknown>
}

/** An RPC request as it travels. */
export interface RequestEnvelope {
  method: string
  payload: unknown
}

/** An RPC reply as it travels. */
export type ReplyEnvelope = { ok: true; result?: unknown } | { ok: false; error: SerializedError }

/** Turns anything thrown into its wire form. Non-AppErrors keep their name and get `INTERNAL_ERROR`. */
export function serializeError(err: unknown): SerializedError {
  if (err instanceof AppError) {
    const out: SerializedError = { name: err.name, code: err.code, message: err.message }
    if (err.details !== undefined) out.details = toJson(err.details) as Record<string, unknown>
    return out
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code
    return {
      name: err.name,
      code: typeof code === 'string' ? code : 'INTERNAL_ERROR',
      message: err.message,
    }
  }
  return { name: 'Error', code: 'INTERNAL_ERROR', message: String(err) }
}

/** Rebuilds the error: the same AppError subclass when the name is known, else AppError with the code. */
export function deserializeError(wire: SerializedError): AppError {
  const known = Object.hasOwn(ERROR_CLASSES, wire.name)
    ? ERROR_CLASSES[wire.name as keyof typeof ERROR_CLASSES]
    : AppError
  const options: { code: string; details?: Record<string, unknown> } = { code: wire.code }
  if (wire.details !== undefined) options.details = wire.details
  return new known(wire.message, options)
}

/** A successful reply, JSON round-tripped so the caller sees what the wire would carry. */
export function okReply(result: unknown): ReplyEnvelope {
  return toJson({ ok: true, result }) as ReplyEnvelope
}

/** A failed reply. */
export function errorReply(err: unknown): ReplyEnvelope {
  return { ok: false, error: serializeError(err) }
}

/** Unwraps a reply: the result, or the rehydrated error thrown. */
export function unwrapReply(reply: ReplyEnvelope): unknown {
  if (reply.ok) return reply.result
  throw deserializeError(reply.error)
}

/**
 * JSON round trip, as any real transport does: Dates become strings, undefined fields vanish,
 * Maps become `{}`. A value that cannot be encoded (a cycle, a BigInt) is a caller bug.
 */
export function toJson(value: unknown): unknown {
  const text = JSON.stringify(value)
  return text === undefined ? undefined : JSON.parse(text)
}
