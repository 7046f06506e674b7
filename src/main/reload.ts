/**
 * Reload without restart, as oslo.config's mutable options: on SIGHUP a service reads its
 * configuration files again (the same `--config-file`s, the same environment) and hands the result
 * to the steps its parts registered: the logger (level, log file reopened or moved), the API's
 * policy, the conductor's webhook dispatcher and fleet gauges, the metrics listener. Each step
 * applies only the options it can apply live (those marked `mutable` in the schema).
 *
 * - A file that does not load (a parse error, an invalid or unknown option) changes nothing: the
 *   error is logged with its file and line, and the steps run again with the running configuration,
 *   so that the log file is still reopened (logrotate) and policy.yaml still read.
 * - A step that fails (a log file that cannot be opened, a policy file that does not parse, an
 *   address the metrics listener cannot take) keeps its own old settings and logs why; the other
 *   steps still apply theirs.
 * - An immutable option whose value differs from the one the process started with is logged as
 *   needing a restart at every reload, until the file and the process agree again.
 */
import type { Logger } from 'pino'
import { configFiles, loadConfig, optionSource, type Config } from '../config/config.js'
import { changeLabel, diffConfig } from '../config/config-diff.js'
import { errorMessage } from '../domain/error-message.js'

/** One part of the service that applies reloaded options. */
export interface ReloadStep {
  /** What it applies, for the log: `logging`, `policy`, `conductor`, `metrics listener`. */
  name: string
  /**
   * Applies what it can of `next` (or the running configuration again, when the files did not
   * load). Throws to keep its old settings; the error is logged.
   */
  apply(next: Config): void | Promise<void>
}

/** What one reload did. */
export interface ReloadOutcome {
  /** The configuration files loaded: false when one did not (nothing of them was applied). */
  loaded: boolean
  /** `[section] option` of every mutable option that took a new value. */
  applied: string[]
  /** `[section] option` of every immutable option that differs from the running process. */
  needsRestart: string[]
  /** Names of the steps that failed and kept their old settings. */
  failedSteps: string[]
}

export interface Reloader {
  /** Registers a step; steps run in the order registered. Returns its removal. */
  add(step: ReloadStep): () => void
  /** Reads the files again and runs every step; reloads asked for meanwhile run after it, once. */
  reload(): Promise<ReloadOutcome>
}

export interface ReloaderDeps {
  log: Logger
  /** Loads the files of the running configuration. @default loadConfig over them and process.env */
  load?: (files: readonly string[]) => Config
}

export function createReloader(started: Config, deps: ReloaderDeps): Reloader {
  const { log } = deps
  const load = deps.load ?? ((files) => loadConfig({ files, env: process.env }))
  const files = configFiles(started)
  const steps: ReloadStep[] = []
  /** The configuration whose mutable options are in force. */
  let running = started
  let inFlight: Promise<ReloadOutcome> | undefined
  let queued: Promise<ReloadOutcome> | undefined

  const runSteps = async (config: Config): Promise<string[]> => {
    const failed: string[] = []
    for (const step of [...steps]) {
      try {
        await step.apply(config)
      } catch (err) {
        failed.push(step.name)
        log.error(
          { err, step: step.name },
          `reload: ${step.name}: ${errorMessage(err)}; its previous settings stay`,
        )
      }
    }
    return failed
  }

  const once = async (): Promise<ReloadOutcome> => {
    let next: Config
    try {
      next = load(files)
    } catch (err) {
      // The steps run with what runs: the log file is reopened, policy.yaml read, as always.
      const failedSteps = await runSteps(running)
      log.error({ err, files }, `reload: ${errorMessage(err)}; keeping the running configuration`)
      return { loaded: false, applied: [], needsRestart: [], failedSteps }
    }
    // The logging step comes first, so that what follows goes to the new log file.
    const failedSteps = await runSteps(next)
    const applied = diffConfig(running, next).filter((c) => c.mutable)
    for (const c of applied) {
      log.info(
        { section: c.section, option: c.name, from: c.from, to: c.to },
        `Option ${changeLabel(c)} changed from [${String(c.from ?? '')}] to [${String(c.to ?? '')}]`,
      )
    }
    const needsRestart = diffConfig(started, next).filter((c) => !c.mutable)
    for (const c of needsRestart) {
      log.warn(
        { section: c.section, option: c.name, source: optionSource(next, c.section, c.name) },
        `Ignoring change to immutable option ${changeLabel(c)} (${optionSource(next, c.section, c.name)}): it needs a restart; the running value stays`,
      )
    }
    running = next
    const outcome = {
      loaded: true,
      applied: applied.map(changeLabel),
      needsRestart: needsRestart.map(changeLabel),
      failedSteps,
    }
    log.info({ ...outcome, files }, 'configuration reloaded')
    return outcome
  }

  const reload = (): Promise<ReloadOutcome> => {
    if (!inFlight) {
      inFlight = once().finally(() => (inFlight = undefined))
      return inFlight
    }
    // One more after the current one covers every signal that came meanwhile.
    queued ??= inFlight.then(() => {
      queued = undefined
      return reload()
    })
    return queued
  }

  return {
    add(step) {
      steps.push(step)
      return () => {
        const i = steps.indexOf(step)
        if (i >= 0) steps.splice(i, 1)
      }
    },
    reload,
  }
}

/**
 * Reloads on SIGHUP (systemd's `ExecReload=kill -HUP $MAINPID`, logrotate's postrotate).
 * Returns the removal of the handler. Without a handler Node would exit on SIGHUP.
 */
export function reloadOnSighup(reloader: Reloader, log: Logger): () => void {
  const onHup = () => {
    log.info({ signal: 'SIGHUP' }, 'reloading the configuration')
    void reloader.reload()
  }
  process.on('SIGHUP', onHup)
  return () => void process.off('SIGHUP', onHup)
}
