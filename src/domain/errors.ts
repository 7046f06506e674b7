/**
 * Domain errors. They carry a stable `code` and optional `details`, never an HTTP status:
 * the API maps classes to statuses in one place (src/api/errors.ts), and the bus carries
 * them across processes by name (src/bus/envelope.ts).
 */
export class AppError extends Error {
  /** Stable machine-readable code, e.g. `DEVICE_NOT_FOUND`. */
  readonly code: string
  /** Extra data for the caller: the field at fault, the conflicting name, … */
  readonly details: Record<string, unknown> | undefined

  constructor(
    message: string,
    options: { code?: string; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = options.code ?? 'INTERNAL_ERROR'
    this.details = options.details
  }
}

type ErrorOptions = { code?: string; details?: Record<string, unknown>; cause?: unknown }

/** The thing asked for does not exist (or is not visible to the caller). */
export class NotFoundError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'NOT_FOUND', ...options })
  }
}

/** The request conflicts with the current state: a duplicate name, a resource in use. */
export class ConflictError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'CONFLICT', ...options })
  }
}

/** The caller sent something invalid. `details.field` names the field when there is one. */
export class InvalidInputError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'INVALID_INPUT', ...options })
  }
}

/**
 * The house wording of a bad field: `Invalid input for field 'groups[0]': required`, with the field
 * in `details.field` (and `extra` beside it). Returned, so that the caller throws it.
 */
export function invalidField(
  field: string,
  problem: string,
  extra: Record<string, unknown> = {},
): InvalidInputError {
  return new InvalidInputError(`Invalid input for field '${field}': ${problem}`, {
    details: { field, ...extra },
  })
}

/** An object is in a state that does not allow the operation (e.g. an ARQ transition). */
export class InvalidStateError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'INVALID_STATE', ...options })
  }
}

/** The configuration is invalid; the message names file, section, option and expected form. */
export class ConfigError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'CONFIG_INVALID', ...options })
  }
}

/** A hardware driver failed. */
export class DriverError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'DRIVER_ERROR', ...options })
  }
}

/** A dependency (database, bus, peer service) is unavailable right now; retrying may help. */
export class UnavailableError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'UNAVAILABLE', ...options })
  }
}

/** An operation did not finish in time. */
export class TimeoutError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'TIMEOUT', ...options })
  }
}

/**
 * A policy rule denies the caller the operation. The message names the rule, in OpenStack's
 * words: "Policy doesn't allow cyborg:arq:delete to be performed."; `details.rule` names it too.
 */
export class ForbiddenError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'POLICY_NOT_AUTHORIZED', ...options })
  }
}

/** Every error class that may cross the bus, by name, for rehydration on the far side. */
export const ERROR_CLASSES = {
  AppError,
  NotFoundError,
  ConflictError,
  InvalidInputError,
  InvalidStateError,
  ConfigError,
  DriverError,
  UnavailableError,
  TimeoutError,
  ForbiddenError,
} as const

/** The caller did not prove who it is: no token, or one Keystone refuses (invalid, expired, revoked). */
export class NotAuthenticatedError extends AppError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'NOT_AUTHENTICATED', ...options })
  }
}
