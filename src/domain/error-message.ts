/**
 * A thrown value's message on one line (an Error's message, or its name when the message is empty;
 * anything else as a string), for failure reports and for wrapping a cause into a new message.
 */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message || err.name : String(err)
  return message.replace(/\s*\n\s*/g, ' ').trim()
}

/**
 * A thrown value's message exactly as thrown (an Error's message, lines and all; anything else as a
 * string), for callers that read its lines.
 */
export function rawErrorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * What went wrong underneath: the code (ECONNREFUSED) or message of `err.cause`, else the message
 * of `err` itself. fetch's "fetch failed" keeps the real reason in its cause.
 */
export function causeMessage(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause
  return cause?.code ?? cause?.message ?? errorMessage(err)
}
