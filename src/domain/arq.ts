/**
 * Accelerator requests (ARQs): the state machine and the expansion of a device profile into one
 * request per accelerator unit. OpenStack Cyborg: `common/constants.py`, `objects/ext_arq.py`
 * (see cyborg-v2-facts.md §2.3).
 */
import { invalidField } from './errors.js'

/** ARQ states (const object plus same-named type). */
export const ArqState = {
  Initial: 'Initial',
  BindStarted: 'BindStarted',
  Bound: 'Bound',
  BindFailed: 'BindFailed',
  Unbound: 'Unbound',
  UnbindFailed: 'UnbindFailed',
  Deleting: 'Deleting',
} as const
export type ArqState = (typeof ArqState)[keyof typeof ArqState]

/** Every state, in the order above. */
export const ARQ_STATES: readonly ArqState[] = Object.values(ArqState)

const { Initial, BindStarted, Bound, BindFailed, Unbound, UnbindFailed, Deleting } = ArqState

/**
 * THE transition table: target state → the states it may be entered from. The repository turns it
 * into one conditional UPDATE (`WHERE state IN (allowedFrom(to))`). There are no self-loops: moving
 * to the state a row is already in changes nothing, so the UPDATE reports it as not moved.
 *
 * Cyborg's rows, kept as they are: → BindStarted, → Bound, → BindFailed; nothing enters Initial (a
 * row starts there). Decisions where Cyborg has a gap (its UnbindFailed has no entry at all):
 * - → Unbound also from UnbindFailed: retrying a failed unbind is how such an ARQ recovers.
 * - → UnbindFailed from the states that may hold a handle or an mdev (BindStarted, Bound,
 *   BindFailed): freeing failed; Initial and Unbound hold nothing, so their unbind cannot fail.
 * - → Deleting from every state but UnbindFailed (Cyborg's rule): an ARQ whose handle may still be
 *   attached must first be unbound successfully, else deleting it would leak the handle. Every
 *   state can still reach Deleting (UnbindFailed through Unbound), which the tests check.
 */
export const ARQ_TRANSITIONS: Readonly<Record<ArqState, readonly ArqState[]>> = {
  Initial: [],
  BindStarted: [Initial, Unbound],
  Bound: [BindStarted],
  BindFailed: [BindStarted, Bound],
  Unbound: [Initial, BindStarted, Bound, BindFailed, UnbindFailed],
  UnbindFailed: [BindStarted, Bound, BindFailed],
  Deleting: [Initial, BindStarted, Bound, BindFailed, Unbound],
}

/** The states an ARQ may move to `to` from. */
export function allowedFrom(to: ArqState): readonly ArqState[] {
  return ARQ_TRANSITIONS[to]
}

/** True when the table lets an ARQ in `from` move to `to`. */
export function canTransition(from: ArqState, to: ArqState): boolean {
  return ARQ_TRANSITIONS[to].includes(from)
}

/** True for a known state name (e.g. read from the database or an API filter). */
export function isArqState(value: string): value is ArqState {
  return (ARQ_STATES as readonly string[]).includes(value)
}

/**
 * True once binding has an outcome Nova waits for: Bound ("completed"), BindFailed or Deleting
 * ("failed"). Nova's `ARQ_RESOLVED_STATES`.
 */
export function isResolved(state: ArqState): boolean {
  return state === Bound || state === BindFailed || state === Deleting
}

/** An accelerator request as stored (one row per accelerator unit). */
export interface Arq {
  id: number
  uuid: string
  state: ArqState
  /** Null for an attachment made through the v1 API (api-v1-and-cli.md): it has no device profile. */
  deviceProfileId: number | null
  /** Index of the device-profile group this request came from. */
  deviceProfileGroupId: number
  projectId: string | null
  hostname: string | null
  deviceRpUuid: string | null
  instanceUuid: string | null
  attachHandleId: number | null
  deployableId: number | null
  createdAt: string
  updatedAt: string | null
  /**
   * When the bind committed: set by the move to Bound, kept while UnbindFailed or Deleting, null
   * otherwise. The custody ledger's `bound_at` (`updatedAt` moves with every later change).
   */
  boundAt: string | null
  /**
   * The key of the bind that last moved it, one per API request: a bind delivered again after its
   * first run committed finds its own key here (docs/arqs.md, "Redelivered binds"). Null if none.
   */
  bindId: string | null
}

/** What one accelerator unit of a profile asks for. */
export interface ArqSpec {
  /** Index of the group in the profile. */
  groupId: number
  resourceClass: string
  requiredTraits: string[]
  forbiddenTraits: string[]
  accel: { bitstream_id?: string; function_id?: string }
}

/**
 * One spec per requested unit, group by group, in key order: `resources:FPGA: "2"` gives two.
 * Traits and `accel:` keys of a group apply to each of its units; other keys are ignored (profiles
 * are validated when created, see device-profile.ts).
 * @throws InvalidInputError naming the field (`groups[0].resources:FPGA`) for an amount that is not
 *   a positive integer, a trait value other than required | forbidden, or when the units of all
 *   groups together exceed `max` (`details.limit`).
 */
export function expandProfileGroups(
  groups: readonly Record<string, string>[],
  max: number,
): ArqSpec[] {
  const specs: ArqSpec[] = []
  groups.forEach((group, groupId) => {
    const requiredTraits: string[] = []
    const forbiddenTraits: string[] = []
    const accel: ArqSpec['accel'] = {}
    const units: [string, number, string][] = []
    for (const [key, value] of Object.entries(group)) {
      const field = `groups[${groupId}].${key}`
      if (key.startsWith('resources:')) {
        units.push([key.slice('resources:'.length), parseAmount(value, field), field])
      } else if (key.startsWith('trait:')) {
        const trait = key.slice('trait:'.length).trim()
        if (value === 'required') requiredTraits.push(trait)
        else if (value === 'forbidden') forbiddenTraits.push(trait)
        else
          throw invalidField(
            field,
            `expected "required" or "forbidden", got ${JSON.stringify(value)}`,
          )
      } else if (key === 'accel:bitstream_id') accel.bitstream_id = value
      else if (key === 'accel:function_id') accel.function_id = value
    }
    for (const [resourceClass, amount, field] of units) {
      // Checked before expanding, so a huge amount fails fast instead of filling memory.
      if (specs.length + amount > max) {
        throw invalidField(field, `the profile asks for more than ${max} accelerators in total`, {
          limit: max,
        })
      }
      for (let i = 0; i < amount; i++) {
        specs.push({
          groupId,
          resourceClass,
          requiredTraits: [...requiredTraits],
          forbiddenTraits: [...forbiddenTraits],
          accel: { ...accel },
        })
      }
    }
  })
  return specs
}

function parseAmount(value: string, field: string): number {
  const trimmed = typeof value === 'string' ? value.trim() : ''
  const amount = /^[0-9]+$/.test(trimmed) ? Number(trimmed) : NaN
  if (!Number.isSafeInteger(amount) || amount < 1) {
    throw invalidField(field, `the amount must be a positive integer, got ${JSON.stringify(value)}`)
  }
  return amount
}
