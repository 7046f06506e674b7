/** An error's message on one line, for the one-line failure reports of the `cyborg` command. */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message || err.name : String(err)
  return message.replace(/\s*\n\s*/g, ' ').trim()
}
