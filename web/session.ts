/**
 * Who is looking: what the API's policy lets the caller do, so the page offers only the actions
 * the API would take (the API enforces them anyway).
 *
 * Not connected yet: every action is offered (noauth's caller is an admin).
 */

/** Whether the caller may do what policy rule `rule` (e.g. `cyborg:device:disable`) guards. */
export function useCan(rule: string): boolean {
  void rule
  return true
}
