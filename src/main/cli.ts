/**
 * The `cyborg` command (bin/cyborg): service subcommands (`up`, `api`, `conductor`, `agent`),
 * `agent probe` (agent-probe-command.ts), `db …` (db-commands.ts), `config sample|show`,
 * `policy list` and `version`. The client subcommands (src/cli) speak HTTP only.
 */
import cluster from 'node:cluster'
import { Command, Option } from 'commander'
import type { Logger } from 'pino'
import { AppError, ConfigError } from '../domain/errors.js'
import {
  configFiles,
  DEFAULT_CONFIG_FILE,
  loadConfig,
  redactConfig,
  resolveConfigFiles,
  type Config,
} from '../config/config.js'
import { renderSample } from '../config/sample.js'
import { renderEffective } from '../config/show.js'
import { createLogger } from './logger.js'
import { errorMessage } from '../domain/error-message.js'
import type * as ServicesModule from './compose.js'
import type { RunningService } from './compose.js'
import { VERSION } from './version.js'
import { registerClientCommands } from '../cli/commands.js'
import { integerIn, oneLineErrors, safeLine } from '../cli/client.js'
import { registerResourceCommands } from '../cli/resource-commands.js'
import { registerArqCommands } from '../cli/arq-commands.js'
import { registerAcceleratorWriteCommands } from '../cli/accelerator-commands.js'
import { registerAttachCommands } from '../cli/attach-commands.js'
import { registerAdminCommands } from '../cli/admin-commands.js'
import { registerHostCommands } from '../cli/host-commands.js'
import { registerExplainCommands } from '../cli/explain-commands.js'
import { registerCapacityCommands } from '../cli/capacity-commands.js'
import { registerQuotaCommands } from '../cli/quota-commands.js'
import { registerCustodyCommands } from '../cli/custody-commands.js'
import { registerTopCommands } from '../cli/top-commands.js'
import { registerWebhookCommands } from '../cli/webhook-commands.js'
import { registerDbCommands } from './commands/db-commands.js'
import { registerImportCommand } from './commands/import-command.js'
import { registerAgentProbe } from './commands/agent-probe-command.js'

// The service modules (fastify, database drivers) load only for the commands that need them,
// so that `cyborg version`, `config sample` and `--help` answer at once.
type Services = typeof ServicesModule
const services = (): Promise<Services> => import('./compose.js')

/** A shutdown that takes longer than this exits with code 1. */
const SHUTDOWN_DEADLINE_MS = 30_000

const program = new Command('cyborg')
  .description('Cyborg: accelerator management for clouds (OpenStack Cyborg v2 API compatible)')
  .addOption(
    new Option(
      '--config-file <path>',
      'configuration file; repeat to layer several, later files win',
    )
      .argParser((value: string, previous: string[]) => [...previous, value])
      .default([], `${DEFAULT_CONFIG_FILE} if it exists`),
  )
  .version(VERSION, '-V, --version', 'print the version')

function configFor(command: Command): Config {
  const { configFile } = command.optsWithGlobals<{ configFile: string[] }>()
  return loadConfig({ files: resolveConfigFiles(configFile), env: process.env })
}

/** Prints the one-line reason a command could not start and exits 1. */
function fail(name: string, err: unknown, log?: Logger): never {
  if (log && !(err instanceof ConfigError)) log.error({ err }, 'failed')
  const line =
    err instanceof ConfigError ? errorMessage(err) : `cyborg ${name}: ${errorMessage(err)}`
  process.stderr.write(`${safeLine(line)}\n`)
  process.exit(1)
}

/**
 * Runs a long-lived service until SIGINT or SIGTERM, then stops it in order and exits 0
 * (1 if a shutdown step failed or took longer than SHUTDOWN_DEADLINE_MS; a second signal exits at once).
 */
async function serve(
  name: string,
  command: Command,
  pick: (
    s: Services,
  ) => (config: Config, log: Logger, options: { signal: AbortSignal }) => Promise<RunningService>,
) {
  let log: Logger | undefined
  let service: RunningService | undefined
  let signalled: NodeJS.Signals | undefined
  // Aborts a start that waits for the message broker, so that a signal need not wait for it.
  const starting = new AbortController()

  const shutdown = async (signal: NodeJS.Signals) => {
    log?.info({ signal }, 'shutting down')
    setTimeout(() => {
      log?.error(`shutdown did not finish within ${SHUTDOWN_DEADLINE_MS} ms; exiting`)
      process.exit(1)
    }, SHUTDOWN_DEADLINE_MS).unref()
    const ok = (await service?.stop()) ?? true
    log?.info('stopped')
    process.exit(ok ? 0 : 1)
  }
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      // An API worker hears a stop twice: from its primary, and from the terminal or service
      // manager that signals the whole group. Its primary gives up on it if need be.
      if (cluster.isWorker) return
      log?.warn({ signal }, 'second signal; exiting without finishing the shutdown')
      process.exit(1)
    }
    signalled = signal
    // While starting, the shutdown waits for the start to finish (below).
    if (service) void shutdown(signal)
    else starting.abort(signal)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const crash = (err: unknown) => {
    log?.fatal({ err }, 'uncaught error; exiting')
    process.stderr.write(`${safeLine(`cyborg ${name}: ${errorMessage(err)}`)}\n`)
    process.exit(1)
  }
  process.on('uncaughtException', crash)
  process.on('unhandledRejection', crash)

  try {
    const config = configFor(command)
    log = createLogger(config, { service: name, env: process.env })
    log.debug({ config: redactConfig(config) }, 'configuration')
    service = await pick(await services())(config, log, { signal: starting.signal })
  } catch (err) {
    if (signalled && err instanceof AppError && err.code === 'BUS_CONNECT_ABORTED') {
      // Stopped while waiting for the broker: nothing was started, so this is a clean exit.
      log?.info({ signal: signalled }, 'stopped before the message broker answered')
      process.exit(0)
    }
    fail(name, err, log)
  }
  if (signalled) await shutdown(signalled)
}

program
  .command('up')
  .description('run API, conductor and agent in one process (migrates the database first)')
  .action((_opts, command: Command) => serve('up', command, (s) => s.startAllInOne))

program
  .command('api')
  .description('run the HTTP API (needs transport_url: a RabbitMQ bus shared with the conductor)')
  .action((_opts, command: Command) =>
    // One process, or a node:cluster primary and its workers: `[api] api_workers` (api-cluster.ts).
    serve('api', command, () => async (config, log, options) => {
      const { startApi } = await import('./api-cluster.js')
      return startApi(config, log, options)
    }),
  )

program
  .command('conductor')
  .description('run the conductor (needs transport_url: a bus shared with API and agents)')
  .action((_opts, command: Command) => serve('conductor', command, (s) => s.startConductorService))

// `cyborg agent` runs the service; `cyborg agent probe` only looks at the host (agent-probe.ts).
const agent = program
  .command('agent')
  .description("run this host's agent (needs transport_url: a bus shared with the conductor)")
  .action((_opts, command: Command) => serve('agent', command, (s) => s.startAgentService))
registerAgentProbe(agent, { configFor, fail })

// `db version | upgrade (sync) | downgrade | backup | check`; returns `db` for more subcommands.
registerImportCommand(registerDbCommands(program, { configFor, fail }), { configFor, fail })

const config = program.command('config').description('configuration helpers')
config
  .command('sample')
  .description('print a sample cyborg.conf with every option, its help and its default')
  .action(() => {
    process.stdout.write(renderSample())
  })
config
  .command('show')
  .description('print the effective configuration (files, then environment), secrets masked')
  .action((_opts, command: Command) => {
    try {
      process.stdout.write(renderEffective(configFor(command)))
    } catch (err) {
      fail('config show', err)
    }
  })

program
  .command('policy')
  .description('policy helpers')
  .command('list')
  .description(
    'print every policy rule in force (default, or overridden by [oslo_policy] policy_file) and what it guards',
  )
  .addOption(
    new Option('--format <format>', 'yaml (can be pasted into policy.yaml) or json')
      .choices(['yaml', 'json'])
      .default('yaml'),
  )
  .action(async (opts: { format: 'yaml' | 'json' }, command: Command) => {
    try {
      const config = configFor(command)
      const policy = await import('../policy/index.js')
      // An override of a rule Cyborg does not have is worth a line, not a failure.
      const warn = (...args: unknown[]) =>
        void process.stderr.write(`warning: ${String(args.find((a) => typeof a === 'string'))}\n`)
      const log = { error: warn, warn, info: () => {}, debug: () => {}, child: () => log }
      const enforcer = policy.createEnforcer(config, { configFiles: configFiles(config), log })
      const rules = enforcer.rules()
      process.stdout.write(
        opts.format === 'json' ? policy.renderPolicyJson(rules) : policy.renderPolicyText(rules),
      )
    } catch (err) {
      fail('policy list', err)
    }
  })

program
  .command('version')
  .description('print the version')
  .action(() => {
    process.stdout.write(`cyborg ${VERSION}\n`)
  })

registerClientCommands(program)
registerResourceCommands(program)
registerArqCommands(program)
registerAcceleratorWriteCommands(program)
registerAttachCommands(program)
registerAdminCommands(program)
registerHostCommands(program)
registerExplainCommands(program)
registerCapacityCommands(program)
registerQuotaCommands(program)
// `custody verify` reads the database itself, as `db sync` does: the check must not trust the API.
registerCustodyCommands(program)
  .command('verify')
  .description('walk the custody hash chain in [database] connection; name the first broken record')
  .option('--public-key <file>', 'checkpoints must be signed by this Ed25519 public key (PEM)')
  .option('--page-size <n>', 'records read per query (1-100000)', integerIn(1, 100_000), '10000')
  .option(
    '--workers <n>',
    'parts of the chain walked side by side (1-8); auto: 2 from 100,000 records',
    integerIn(1, 8, ['auto']),
    'auto',
  )
  .addOption(
    new Option('--format <format>', 'table for people, json for scripts')
      .choices(['table', 'json'])
      .default('table'),
  )
  .action(
    async (
      opts: { publicKey?: string; pageSize: string; format: string; workers: string },
      command: Command,
    ) => {
      try {
        const { verifyCustodyLedger } = await import('./commands/custody-verify.js')
        const ok = await verifyCustodyLedger(configFor(command), opts)
        if (!ok) process.exitCode = 1
      } catch (err) {
        fail('custody verify', err)
      }
    },
  )
registerTopCommands(program)
registerWebhookCommands(program)
oneLineErrors(program)

await program.parseAsync(process.argv)
