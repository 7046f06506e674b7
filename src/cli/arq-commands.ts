/**
 * `cyborg arq list|show|create|bind|unbind|delete`: v2 accelerator requests (docs/arqs.md), with
 * the request bodies the openstack CLI sends (../shared/design/wire-openstack-cli.md), except that
 * bind sends the project too (microversion 2.1 and later) and may leave out the provider
 * (standalone: the conductor picks a fitting device on the host).
 */
import type { Command } from 'commander'
import {
  action,
  client,
  col,
  deleteEach,
  query,
  V2_VERSION,
  type ClientFlags,
  type Row,
} from './client.js'
import { apiRequest, CliError, type ClientOptions } from './http.js'
import { print } from './output.js'

export const ARQ_COLUMNS = [
  col('UUID', 'uuid'),
  col('State', 'state'),
  col('Device Profile', 'device_profile_name'),
  col('Group', 'device_profile_group_id'),
  col('Host', 'hostname'),
  col('Instance', 'instance_uuid'),
  col('Provider', 'device_rp_uuid'),
  col('Handle Type', 'attach_handle_type'),
  col('Handle', 'attach_handle_info'),
]

export const ARQS = '/v2/accelerator_requests'

/** What a bind adds to one request; the provider and project are optional. */
export interface ArqBinding {
  hostname: string
  instanceUuid: string
  deviceRpUuid?: string
  projectId?: string
}

/** The JSON-Patch list that binds one request (src/api/v2/arq-patch.ts). */
export function bindOps(b: ArqBinding): { op: 'add'; path: string; value: string }[] {
  const ops = [
    { op: 'add' as const, path: '/hostname', value: b.hostname },
    { op: 'add' as const, path: '/instance_uuid', value: b.instanceUuid },
  ]
  if (b.deviceRpUuid !== undefined)
    ops.push({ op: 'add', path: '/device_rp_uuid', value: b.deviceRpUuid })
  if (b.projectId !== undefined) ops.push({ op: 'add', path: '/project_id', value: b.projectId })
  return ops
}

/** Creates the requests of a device profile: one per unit of each group's resources. */
export async function createArqs(options: ClientOptions, profile: string): Promise<Row[]> {
  const body = await apiRequest<{ arqs: Row[] }>(options, 'POST', ARQS, {
    version: V2_VERSION,
    body: { device_profile_name: profile },
  })
  return body.arqs
}

export async function getArq(options: ClientOptions, uuid: string): Promise<Row> {
  return apiRequest<Row>(options, 'GET', `${ARQS}/${encodeURIComponent(uuid)}`, {
    version: V2_VERSION,
  })
}

export async function listArqs(options: ClientOptions, instance?: string): Promise<Row[]> {
  return (
    await apiRequest<{ arqs: Row[] }>(options, 'GET', `${ARQS}${query({ instance })}`, {
      version: V2_VERSION,
    })
  ).arqs
}

/** Why a bind may end BindFailed: the API does not carry the conductor's reason, so say where to look. */
export function bindFailedReason(host: string, what: string): string {
  return (
    `the bind failed (BindFailed): no active, enabled and free accelerator on host ${host} fits ${what}, or its agent could not prepare it; ` +
    `\`cyborg accelerator list --host ${host}\` shows what is there, and the conductor's log says why`
  )
}

interface BindFlags extends ClientFlags {
  host: string
  instance: string
  provider?: string
  project?: string
}

export function registerArqCommands(program: Command): void {
  const arq = program
    .command('arq')
    .description(
      'v2 accelerator requests (ARQs): create from a device profile, bind to an instance on a host, unbind, delete',
    )
  client(arq.command('list').description('list accelerator requests'))
    .option('--instance <uuid>', 'only the requests of this instance')
    .action(
      action<ClientFlags & { instance?: string }>(async (f) =>
        print(f.format, await listArqs(f, f.instance), ARQ_COLUMNS),
      ),
    )
  client(
    arq
      .command('show')
      .description('show one accelerator request')
      .argument('<uuid>', 'the request'),
  ).action(action(async (f, [uuid]) => print(f.format, await getArq(f, uuid!), [])))
  client(
    arq
      .command('create')
      .description(
        'create accelerator requests from a device profile: one per unit of each group (all are printed)',
      )
      .argument('<device-profile>', 'the device profile, by name'),
  ).action(
    action(async (f, [profile]) => print(f.format, await createArqs(f, profile!), ARQ_COLUMNS)),
  )
  client(
    arq
      .command('bind')
      .description(
        "bind a request to an instance on a host; the host's agent prepares the device. Exits 1 when it ends BindFailed",
      )
      .argument('<uuid>', 'the request (Initial or Unbound)'),
  )
    .requiredOption('--host <hostname>', 'the compute host the instance runs on')
    .requiredOption('--instance <uuid>', 'the instance (VM) uuid')
    .option(
      '--provider <rp_uuid>',
      "the deployable's resource provider (rp_uuid in `deployable list`), as Nova sends it; " +
        'without it the conductor picks a fitting active device on the host (standalone)',
    )
    .option('--project <id>', 'the project the request is for (admin only)')
    .action(
      action<BindFlags>(async (f, [uuid]) => {
        const ops = bindOps({
          hostname: f.host,
          instanceUuid: f.instance,
          deviceRpUuid: f.provider,
          projectId: f.project,
        })
        await apiRequest(f, 'PATCH', `${ARQS}/${encodeURIComponent(uuid!)}`, {
          version: V2_VERSION,
          body: { [uuid!]: ops },
        })
        const bound = await getArq(f, uuid!)
        print(f.format, bound, [])
        if (bound.state === 'BindFailed')
          throw new CliError(
            bindFailedReason(
              f.host,
              f.provider
                ? `provider ${f.provider}`
                : `profile ${String(bound.device_profile_name)}`,
            ),
          )
      }),
    )
  client(
    arq
      .command('unbind')
      .description(
        "unbind a request: the host's agent releases the device, and the request is Unbound (it can be bound again)",
      )
      .argument('<uuid>', 'the request'),
  ).action(
    action(async (f, [uuid]) => {
      const ops = ['/hostname', '/instance_uuid', '/device_rp_uuid'].map((path) => ({
        op: 'remove',
        path,
      }))
      await apiRequest(f, 'PATCH', `${ARQS}/${encodeURIComponent(uuid!)}`, {
        version: V2_VERSION,
        body: { [uuid!]: ops },
      })
      print(f.format, await getArq(f, uuid!), [])
    }),
  )
  client(
    arq
      .command('delete')
      .description('delete requests; a bound one is unbound first (its device released)')
      .argument('<uuid...>', 'the requests'),
  ).action(
    action((f, uuids) =>
      deleteEach(f, uuids, (uuid) => `${ARQS}/${encodeURIComponent(uuid)}`, V2_VERSION),
    ),
  )
}
