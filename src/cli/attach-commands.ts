/**
 * `cyborg attach-instance` and `cyborg detach-instance` (api-v1-and-cli.md): give an instance an
 * accelerator and take it back, through the v1 API (a named accelerator) or the v2 API (a request
 * created from a device profile and bound standalone on a host). Both print one row per
 * attachment: the API it went through, the accelerator, the request that records it, the state.
 */
import type { Command } from 'commander'
import { ARQS, bindFailedReason, bindOps, createArqs, listArqs } from './arq-commands.js'
import { attachmentsOf, listAllAccelerators } from './accelerator-commands.js'
import { action, client, col, query, V2_VERSION, type ClientFlags, type Row } from './client.js'
import { apiRequest, CliError, type ClientOptions } from './http.js'
import { print } from './output.js'
import { errorMessage } from '../domain/error-message.js'

/** A type, not an interface, so that it is a Row (an index signature) for print(). */
type AttachmentRow = {
  api: string
  accelerator: string | null
  request: string | null
  instance_uuid: string
  hostname: string | null
  state: string
}

const COLUMNS = [
  col('API', 'api'),
  col('Accelerator', 'accelerator'),
  col('Request', 'request'),
  col('Instance', 'instance_uuid'),
  col('Host', 'hostname'),
  col('State', 'state'),
]

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

/** Which v1 accelerator holds each request (from the `attachments` of the v1 view); empty if v1 cannot say. */
async function acceleratorsByRequest(options: ClientOptions): Promise<Map<string, string>> {
  const map = new Map<string, string>()
  try {
    for (const acc of await listAllAccelerators(options))
      for (const a of attachmentsOf(acc)) map.set(a.arq_uuid, String(acc.uuid))
  } catch {
    // The accelerator column stays empty; the attach or detach itself is done.
  }
  return map
}

/** Rows for v2 requests, with the accelerator that each one holds when known. */
async function arqRows(
  options: ClientOptions,
  arqs: Row[],
  instance: string,
): Promise<AttachmentRow[]> {
  const held = await acceleratorsByRequest(options)
  return arqs.map((a) => ({
    api: 'v2',
    accelerator: held.get(String(a.uuid)) ?? null,
    request: str(a.uuid),
    instance_uuid: instance,
    hostname: str(a.hostname),
    state: String(a.state),
  }))
}

/** Deletes requests this command created, when its bind did not go through. */
async function deleteQuietly(options: ClientOptions, uuids: string[]): Promise<string> {
  try {
    await apiRequest(options, 'DELETE', `${ARQS}${query({ arqs: uuids.join(',') })}`, {
      version: V2_VERSION,
    })
    return `its ${uuids.length} new request(s) were deleted`
  } catch (err) {
    return `deleting its new requests failed too (${errorMessage(err)}); delete them with \`cyborg arq delete ${uuids.join(' ')}\``
  }
}

interface AttachFlags extends ClientFlags {
  accelerator?: string
  profile?: string
  host?: string
}

async function attachV1(f: AttachFlags, instance: string, uuid: string): Promise<void> {
  const acc = await apiRequest<Row>(f, 'PUT', `/v1/accelerators/${encodeURIComponent(uuid)}`, {
    body: { instance_uuid: instance },
  })
  const mine = attachmentsOf(acc).filter((a) => a.instance_uuid === instance)
  const rows: AttachmentRow[] = mine.map((a) => ({
    api: a.api,
    accelerator: String(acc.uuid),
    request: a.arq_uuid,
    instance_uuid: instance,
    hostname: a.hostname ?? str(acc.hostname),
    state: a.state,
  }))
  print(f.format, rows, COLUMNS)
  if (rows.some((r) => r.state === 'BindFailed'))
    throw new CliError(bindFailedReason(String(acc.hostname), `accelerator ${uuid}`))
}

async function attachV2(
  f: AttachFlags,
  instance: string,
  profile: string,
  host: string,
): Promise<void> {
  const created = (await createArqs(f, profile)).map((a) => String(a.uuid))
  const body = Object.fromEntries(
    created.map((uuid) => [uuid, bindOps({ hostname: host, instanceUuid: instance })]),
  )
  try {
    await apiRequest(f, 'PATCH', ARQS, { version: V2_VERSION, body })
  } catch (err) {
    if (!(err instanceof CliError)) throw err
    throw new CliError(`${err.message}; ${await deleteQuietly(f, created)}`)
  }
  const mine = (await listArqs(f, instance)).filter((a) => created.includes(String(a.uuid)))
  print(f.format, await arqRows(f, mine, instance), COLUMNS)
  if (mine.some((a) => a.state !== 'Bound')) {
    throw new CliError(
      `${bindFailedReason(host, `profile ${profile}`)}; ${await deleteQuietly(f, created)}`,
    )
  }
}

async function detach(f: ClientFlags & { accelerator?: string }, instance: string): Promise<void> {
  const v1 = { instance_uuid: instance }
  if (f.accelerator !== undefined) {
    await apiRequest(
      f,
      'DELETE',
      `/v1/accelerators/${encodeURIComponent(f.accelerator)}${query(v1)}`,
    )
    print(
      f.format,
      [
        {
          api: 'v1',
          accelerator: f.accelerator,
          request: null,
          instance_uuid: instance,
          hostname: null,
          state: 'detached',
        },
      ],
      COLUMNS,
    )
    return
  }
  const rows: AttachmentRow[] = []
  for (const acc of await listAllAccelerators(f)) {
    const mine = attachmentsOf(acc).filter((a) => a.instance_uuid === instance && a.api === 'v1')
    if (mine.length === 0) continue
    await apiRequest(
      f,
      'DELETE',
      `/v1/accelerators/${encodeURIComponent(String(acc.uuid))}${query(v1)}`,
    )
    for (const a of mine)
      rows.push({
        api: 'v1',
        accelerator: String(acc.uuid),
        request: a.arq_uuid,
        instance_uuid: instance,
        hostname: a.hostname,
        state: 'detached',
      })
  }
  const arqs = await listArqs(f, instance)
  if (arqs.length > 0) {
    const described = await arqRows(f, arqs, instance)
    await apiRequest(f, 'DELETE', `${ARQS}${query({ instance })}`, { version: V2_VERSION })
    rows.push(...described.map((r) => ({ ...r, state: 'deleted' })))
  }
  print(f.format, rows, COLUMNS)
}

export function registerAttachCommands(program: Command): void {
  client(
    program
      .command('attach-instance')
      .description(
        'attach an accelerator to an instance: a named one through the v1 API (--accelerator), or one per unit of a device profile ' +
          'through v2 requests bound on a host (--profile with --host). Exits 1 when the bind fails (BindFailed), after deleting the requests it created',
      )
      .argument('<instance_id>', 'the instance (VM) uuid'),
  )
    .option('--accelerator <uuid>', 'the v1 accelerator to attach (`cyborg accelerator list`)')
    .option(
      '--profile <name>',
      'the device profile to create v2 requests from (`cyborg device-profile list`); needs --host',
    )
    .option(
      '--host <hostname>',
      'with --profile: the host the instance runs on; the conductor picks a fitting active device there',
    )
    .action(
      action<AttachFlags>(async (f, [instance]) => {
        if ((f.accelerator === undefined) === (f.profile === undefined))
          throw new CliError('give either --accelerator UUID or --profile NAME --host HOSTNAME')
        if (f.accelerator !== undefined) {
          if (f.host !== undefined)
            throw new CliError(
              '--host goes with --profile; with --accelerator the accelerator is attached where it is',
            )
          return attachV1(f, instance!, f.accelerator)
        }
        if (f.host === undefined)
          throw new CliError('--profile needs --host HOSTNAME: the host the instance runs on')
        return attachV2(f, instance!, f.profile!, f.host)
      }),
    )
  client(
    program
      .command('detach-instance')
      .description(
        "detach accelerators from an instance: with --accelerator that one's v1 attachment; without, every v1 attachment of the instance " +
          'and every v2 request for it (deleted, their devices released)',
      )
      .argument('<instance_id>', 'the instance (VM) uuid'),
  )
    .option('--accelerator <uuid>', 'detach only this v1 accelerator')
    .action(action<ClientFlags & { accelerator?: string }>((f, [instance]) => detach(f, instance!)))
}
