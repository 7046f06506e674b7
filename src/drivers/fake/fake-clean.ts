/**
 * The fake driver's clean (docs/cleaning.md): it touches nothing and does what its options say, so
 * that tests, demos and benchmarks drive every outcome of the agent's clean path:
 * `clean_delay_ms` (how long it takes; 0 for the boot-storm bench), `clean_outcome` (ok, fail,
 * unsupported), `clean_evidence` (what it reports) and `clean_verify` (ok, fail).
 */
import {
  CleanErrorCode,
  CleanMethod,
  cleanError,
  sleep,
  throwIfCleanAborted,
  type CleanCallOptions,
  type CleanResult,
  type CleanTarget,
  type VerifyResult,
} from '../clean.js'
import { choiceOption, thresholdOption } from '../health.js'

/** Options of the fake clean (strings, like every driver option). */
export interface FakeCleanOptions {
  /** Milliseconds the clean takes. @default '0' */
  clean_delay_ms?: string
  /** `ok`, `fail` (CLEAN_FAILED) or `unsupported` (CLEAN_UNSUPPORTED). @default 'ok' */
  clean_outcome?: string
  /** The evidence reported. @default 'fake clean of <handle>' */
  clean_evidence?: string
  /** `ok` or `fail` (VERIFY_FAILED). @default 'ok' */
  clean_verify?: string
}

/**
 * The fake driver's `clean` and `verify`.
 * @throws ConfigError for a bad option (at creation)
 */
export function createFakeCleanSteps(options: Readonly<FakeCleanOptions>) {
  const opts = options as Readonly<Record<string, string | undefined>>
  const delayMs = thresholdOption('fake', opts, 'clean_delay_ms', 0)
  const outcome = choiceOption('fake', opts, 'clean_outcome', ['ok', 'fail', 'unsupported'], 'ok')
  const verifyOutcome = choiceOption('fake', opts, 'clean_verify', ['ok', 'fail'], 'ok')
  const evidence = options.clean_evidence
  const unit = (t: CleanTarget) => Object.values(t.handle.info).join(':')
  return {
    async clean(target: CleanTarget, { signal }: CleanCallOptions = {}): Promise<CleanResult> {
      throwIfCleanAborted('fake', signal)
      if (delayMs > 0) {
        await sleep(delayMs, signal).catch((err: unknown) => {
          throw cleanError('fake', CleanErrorCode.ABORTED, 'clean aborted', { cause: err })
        })
      }
      if (outcome === 'unsupported')
        throw cleanError('fake', CleanErrorCode.UNSUPPORTED, 'clean_outcome = unsupported')
      if (outcome === 'fail')
        throw cleanError('fake', CleanErrorCode.FAILED, 'clean_outcome = fail')
      return { method: CleanMethod.FAKE, evidence: evidence ?? `fake clean of ${unit(target)}` }
    },
    async verify(target: CleanTarget): Promise<VerifyResult> {
      if (verifyOutcome === 'fail')
        throw cleanError('fake', CleanErrorCode.VERIFY_FAILED, 'clean_verify = fail')
      return { evidence: `fake verify of ${unit(target)}` }
    },
  }
}
