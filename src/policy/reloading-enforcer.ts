/**
 * An Enforcer whose rules follow policy.yaml while the API runs, as oslo.policy's do: the file is
 * read again when its modification time (or size, or the file found) changes, checked at most
 * every `checkIntervalMs` when a request is enforced, so that a busy API pays one stat every few
 * seconds, not one per request; and at once on `reload` (the service's SIGHUP), which may also
 * name another `[oslo_policy] policy_file`. A file that does not parse keeps the rules in force
 * and logs why, naming the file (and the line); the next change of the file is tried again.
 */
import { statSync } from 'node:fs'
import type { Logger } from '../domain/logger.js'
import { noopLogger } from '../domain/logger.js'
import { errorMessage } from '../domain/error-message.js'
import type { Target } from './check.js'
import {
  createEnforcerFromRules,
  type Enforcer,
  type PolicyConfig,
  type PolicySubject,
} from './enforcer.js'
import { findPolicyFile, readPolicyFile, type FindPolicyFileOptions } from './policy-file.js'

export interface ReloadingEnforcerOptions extends FindPolicyFileOptions {
  /** Warnings, the reloads and why one failed. @default noopLogger */
  log?: Logger
  /** How often enforce() may look at the file. @default 5000 */
  checkIntervalMs?: number
  /** A monotonic clock in ms. @default performance.now */
  now?: () => number
  /** What identifies a version of the file. @default modification time, size and inode from statSync */
  signatureOf?: (file: string) => string
}

export interface ReloadingEnforcer extends Enforcer {
  /**
   * Reads the policy file of `config` now (SIGHUP), even if unchanged.
   * @returns whether the rules in force now come from it; false: the old ones stay (logged)
   */
  reload(config: PolicyConfig): boolean
}

/** Modification time, size and inode: a rewrite in place or a rename over the file both change it. */
function statSignature(file: string): string {
  const st = statSync(file, { bigint: true })
  return `${st.mtimeNs}:${st.size}:${st.ino}`
}

/**
 * The enforcer of `config`, kept current with its policy file.
 * @throws ConfigError when the file in force at start does not parse: start-up stops, as before.
 */
export function createReloadingEnforcer(
  config: PolicyConfig,
  options: ReloadingEnforcerOptions = {},
): ReloadingEnforcer {
  const {
    log = noopLogger,
    checkIntervalMs = 5000,
    now = () => performance.now(),
    signatureOf = statSignature,
    ...find
  } = options
  let policyFile = config.oslo_policy.policy_file
  /** What the rules in force were read from; `none` when no file was found. */
  let loadedFrom = 'none'
  /** The last version tried and refused, so that a broken file is reported once. */
  let refused: string | undefined
  let lastCheck = now()
  let current: Enforcer

  /** Where the file is now and which version it is; 'none' when absent (the default file may be). */
  const locate = (): { file: string | undefined; signature: string } => {
    const file = findPolicyFile(policyFile, find)
    return { file, signature: file === undefined ? 'none' : `${file}@${signatureOf(file)}` }
  }
  const build = (file: string | undefined): Enforcer =>
    createEnforcerFromRules({
      overrides: file === undefined ? {} : readPolicyFile(file),
      ...(file === undefined ? {} : { policyFile: file }),
      log,
    })

  const initial = locate()
  current = build(initial.file)
  loadedFrom = initial.signature

  /** Reads the file when it changed (or `force`); true when the rules in force come from it. */
  const refresh = (force: boolean): boolean => {
    let where: { file: string | undefined; signature: string } | undefined
    try {
      where = locate()
      if (!force && (where.signature === loadedFrom || where.signature === refused)) return true
      const next = build(where.file)
      current = next
      loadedFrom = where.signature
      refused = undefined
      log.info(
        { policyFile: where.file },
        where.file === undefined
          ? `policy: no ${policyFile} found; the default rules are in force`
          : `policy: rules reloaded from ${where.file}`,
      )
      return true
    } catch (err) {
      // Report each broken version once; the rules in force stay until a good one appears.
      const version = where?.signature ?? `missing:${policyFile}`
      if (force || version !== refused) {
        log.error(
          { err, policyFile: where?.file ?? policyFile },
          `policy: ${errorMessage(err)}; keeping the rules in force`,
        )
      }
      refused = version
      return false
    }
  }

  const maybeRefresh = () => {
    const t = now()
    if (t - lastCheck < checkIntervalMs) return
    lastCheck = t
    refresh(false)
  }

  return {
    enforce(rule: string, ctx: PolicySubject, target?: Target): void {
      maybeRefresh()
      current.enforce(rule, ctx, target)
    },
    allowed(rule: string, ctx: PolicySubject, target?: Target): boolean {
      maybeRefresh()
      return current.allowed(rule, ctx, target)
    },
    rules: () => current.rules(),
    get policyFile() {
      return current.policyFile
    },
    reload(next: PolicyConfig): boolean {
      const previous = policyFile
      policyFile = next.oslo_policy.policy_file
      lastCheck = now()
      const ok = refresh(true)
      // A policy_file that names nothing usable stays unapplied: the next SIGHUP tries again.
      if (!ok) policyFile = previous
      return ok
    },
  }
}
