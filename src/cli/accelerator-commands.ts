/**
 * The v1 writes of `cyborg accelerator` (api-v1-and-cli.md): `create` (a remote accelerator that no
 * agent discovers), `set-spec` (acc_specs, guarded by the ETag), `ready` (the operator lifecycle),
 * `attach` (to an instance or a host) and `delete` (the seed's DELETE: detach). `list` and `show`
 * are in commands.ts; this file adds to the same `accelerator` command.
 */
import type { Command } from 'commander'
import {
  action,
  client,
  col,
  parseJson,
  progress,
  query,
  type ClientFlags,
  type Row,
} from './client.js'
import { apiExchange, apiRequest, CliError, type ClientOptions } from './http.js'
import { print } from './output.js'

const ACCELERATORS = '/v1/accelerators'
const SPEC_EXAMPLE = `'{"remote": 1, "num": 1}'`
const path = (uuid: string) => `${ACCELERATORS}/${encodeURIComponent(uuid)}`

/** One allocation of a v1 accelerator, made through v1 (attach) or v2 (an ARQ, e.g. Nova's). */
export interface V1Attachment {
  arq_uuid: string
  instance_uuid: string | null
  hostname: string | null
  api: 'v1' | 'v2'
  state: string
}

/** The path and query of an absolute `next` link, so that it is sent to the client's own --url. */
function pathOf(options: ClientOptions, link: string): string {
  const base = options.url.replace(/\/+$/, '')
  if (link.startsWith(base)) return link.slice(base.length)
  const url = new URL(link, base)
  return `${url.pathname}${url.search}`
}

/** Every v1 accelerator, following the `next` links page by page. */
export async function listAllAccelerators(options: ClientOptions): Promise<Row[]> {
  const all: Row[] = []
  for (let next: string | undefined = ACCELERATORS; next !== undefined;) {
    const page: { accelerators: Row[]; next?: string } = await apiRequest(options, 'GET', next)
    all.push(...page.accelerators)
    next = page.next && page.accelerators.length > 0 ? pathOf(options, page.next) : undefined
  }
  return all
}

export const attachmentsOf = (accelerator: Row): V1Attachment[] =>
  Array.isArray(accelerator.attachments) ? (accelerator.attachments as V1Attachment[]) : []

/** `a.b.c=value`: the value is JSON when it parses (numbers, booleans, objects), else the text. */
function applySet(spec: Record<string, unknown>, assignment: string): void {
  const eq = assignment.indexOf('=')
  if (eq <= 0)
    throw new CliError(
      `--set ${JSON.stringify(assignment)}: expected key=value, e.g. --set num=2 or --set acc_capability.traits=CUSTOM_X`,
    )
  const keys = assignment.slice(0, eq).split('.')
  const text = assignment.slice(eq + 1)
  let value: unknown = text
  try {
    value = JSON.parse(text)
  } catch {
    // plain text
  }
  let target = spec
  for (const key of keys.slice(0, -1)) {
    const inner = target[key]
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) target[key] = {}
    target = target[key] as Record<string, unknown>
  }
  target[keys.at(-1)!] = value
}

interface SpecFlags extends ClientFlags {
  spec?: string
  set?: string[]
  ifMatch?: string
}

/** Replaces the spec; without --if-match, guarded by the ETag of a fresh GET. */
async function setSpec(f: SpecFlags, uuid: string): Promise<void> {
  if ((f.spec === undefined) === (f.set === undefined)) {
    throw new CliError(
      'give either --spec JSON (the whole spec) or --set key=value (change some keys), not both and not neither',
    )
  }
  let etag = f.ifMatch
  let spec: unknown
  if (f.spec !== undefined) {
    spec = parseJson('--spec', f.spec, SPEC_EXAMPLE)
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
      throw new CliError(`--spec must be a JSON object, e.g. ${SPEC_EXAMPLE}`)
  }
  if (f.set !== undefined || etag === undefined) {
    const current = await apiExchange<Row>(f, 'GET', path(uuid))
    etag ??= current.headers.get('etag') ?? undefined
    if (f.set !== undefined) {
      const base = current.body.acc_specs
      const merged = structuredClone(
        typeof base === 'object' && base !== null ? (base as Record<string, unknown>) : {},
      )
      for (const assignment of f.set) applySet(merged, assignment)
      spec = merged
    }
  }
  try {
    const headers = etag === undefined ? undefined : { 'if-match': etag }
    print(
      f.format,
      await apiRequest<Row>(f, 'PUT', `${path(uuid)}/acc_specs`, {
        body: { acc_specs: spec },
        headers,
      }),
      [],
    )
  } catch (err) {
    if (err instanceof CliError && err.status === 409 && etag !== undefined) {
      throw new CliError(
        `another process updated the spec of accelerator ${uuid} (it is no longer ${etag}); show ` +
          `it with \`cyborg accelerator show ${uuid}\` and try again (${err.message})`,
      )
    }
    throw err
  }
}

/** Finds the `accelerator` command that commands.ts registered. */
function acceleratorCommand(program: Command): Command {
  const found = program.commands.find((c) => c.name() === 'accelerator')
  if (!found)
    throw new Error(
      'registerAcceleratorWriteCommands: register the client commands (commands.ts) first',
    )
  return found
}

export function registerAcceleratorWriteCommands(program: Command): void {
  const accelerator = acceleratorCommand(program)
  client(
    accelerator
      .command('create')
      .description(
        'register an accelerator that no agent discovers (e.g. a remote one); it starts inactive',
      )
      .argument('<name>', 'its name, unique'),
  )
    .option('--uuid <uuid>', 'its uuid (default: the server picks one)')
    .action(
      action<ClientFlags & { uuid?: string }>(async (f, [name]) => {
        const created = await apiExchange(f, 'POST', ACCELERATORS, {
          body: f.uuid === undefined ? { name } : { name, uuid: f.uuid },
        })
        const location = created.headers.get('location')
        if (!location)
          throw new CliError(
            `POST ${ACCELERATORS} answered ${created.status} without a Location header; find the new accelerator with \`cyborg accelerator list\``,
          )
        print(f.format, await apiRequest<Row>(f, 'GET', pathOf(f, location)), [])
      }),
    )
  client(
    accelerator
      .command('set-spec')
      .description(
        "replace an accelerator's acc_specs. Without --if-match the ETag of a fresh read is sent, so a concurrent change fails instead of being overwritten",
      )
      .argument('<uuid>', 'the accelerator'),
  )
    .option('--spec <json>', `the whole new spec as a JSON object, e.g. ${SPEC_EXAMPLE}`)
    .option(
      '--set <key=value>',
      'change one key of the current spec (repeatable; a.b=v sets a nested key; the value is JSON when it parses, else text)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option(
      '--if-match <etag>',
      'only if the spec is still at this ETag (from an earlier read); a stale one fails with exit 1',
    )
    .action(action<SpecFlags>((f, [uuid]) => setSpec(f, uuid!)))
  client(
    accelerator
      .command('ready')
      .description(
        "mark an inactive (or failed) accelerator ready: the host's agent installs it, and it becomes active or error",
      )
      .argument('<uuid>', 'the accelerator'),
  ).action(
    action(async (f, [uuid]) => {
      progress(f, `installing accelerator ${uuid} …`)
      const result = await apiRequest<Row>(f, 'POST', `${path(uuid!)}/ready`)
      print(f.format, result, [])
      if (result.lifecycle === 'error')
        throw new CliError(
          `the install failed: ${String(result.lifecycle_reason)}; fix it, then run ready again`,
        )
    }),
  )
  client(
    accelerator
      .command('attach')
      .description(
        'attach an accelerator to an instance (VM) or to a host; it fails if it is attached elsewhere',
      )
      .argument('<uuid>', 'the accelerator'),
  )
    .option('--instance <uuid>', 'the instance (VM) to attach it to')
    .option('--host <hostname>', 'the host to attach it to (its agent prepares the device there)')
    .action(
      action<ClientFlags & { instance?: string; host?: string }>(async (f, [uuid]) => {
        if ((f.instance === undefined) === (f.host === undefined))
          throw new CliError('give either --instance UUID or --host HOSTNAME')
        const body = f.instance !== undefined ? { instance_uuid: f.instance } : { hostname: f.host }
        print(f.format, await apiRequest<Row>(f, 'PUT', path(uuid!), { body }), [])
      }),
    )
  client(
    accelerator
      .command('delete')
      .description(
        "detach an accelerator (the seed's DELETE is a detach: the accelerator stays in the " +
          "inventory). Without --instance every v1 attachment goes. v2 requests (e.g. Nova's) are " +
          'left alone: use `arq delete` or detach-instance; it fails when only they hold it',
      )
      .argument('<uuid>', 'the accelerator'),
  )
    .option('--instance <uuid>', "detach only this instance's attachment")
    .action(
      action<ClientFlags & { instance?: string }>(async (f, [uuid]) => {
        await apiRequest(f, 'DELETE', `${path(uuid!)}${query({ instance_uuid: f.instance })}`)
        const rows = [{ accelerator: uuid, detached: f.instance ?? 'every v1 attachment' }]
        print(f.format, rows, [col('Accelerator', 'accelerator'), col('Detached', 'detached')])
      }),
    )
}
