/**
 * oslo.log's options of `[DEFAULT]` (docs/operations.md): where the log lines go and at
 * which level. A part of the one option table in schema.ts, kept here for that file's size. Every
 * one is mutable: a SIGHUP applies it (src/main/reload.ts).
 */
import { bool, optionalPath, optionalStr } from './options.js'

export const logOptions = {
  debug: bool({
    default: false,
    mutable: true,
    help: 'Log at debug level (CYBORG_LOG_LEVEL, when set, wins).',
  }),
  log_file: optionalStr({
    mutable: true,
    help:
      'File the log lines are appended to, taken relative to log_dir when that is set ' +
      "(oslo.log's rule). Unset: lines go to standard output (or only to the journal with " +
      'use_journal). The file is reopened on SIGHUP, so logrotate needs no copytruncate.',
  }),
  log_dir: optionalPath({
    mutable: true,
    help:
      'Directory of log_file. Set alone, the file is <log_dir>/cyborg-<command>.log ' +
      '(cyborg-api.log, cyborg-conductor.log, cyborg-agent.log, cyborg-up.log), as oslo.log ' +
      'names it after the program.',
  }),
  use_journal: bool({
    default: false,
    mutable: true,
    help:
      "Send the log lines to systemd's journal with their priority: each line on standard " +
      'output gets the <N> prefix journald reads as PRIORITY (sd-daemon(3)), so journalctl -p ' +
      'warning works. The line itself stays JSON (no native journal fields; see ' +
      'docs/operations.md). Also with log_file set, the lines go to both.',
  }),
}
