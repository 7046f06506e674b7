/**
 * `cyborg deployable list|show` and `cyborg device-profile list|show|create|delete`: the v2
 * resources, over HTTP at the client's microversion (client.ts), in the shapes the openstack CLI
 * sends (../shared/design/wire-openstack-cli.md).
 */
import type { Command } from 'commander'
import {
  action,
  client,
  col,
  deleteEach,
  parseJson,
  V2_VERSION,
  type ClientFlags,
  type Row,
} from './client.js'
import { apiRequest, CliError } from './http.js'
import { print } from './output.js'
import { registerProgram } from './reconfig-commands.js'

const DEPLOYABLE_COLUMNS = [
  col('UUID', 'uuid'),
  col('Name', 'name'),
  col('Device Id', 'device_id'),
  col('Accelerators', 'num_accelerators'),
  col('Provider (rp_uuid)', 'rp_uuid'),
  col('Driver', 'driver_name'),
]
const PROFILE_COLUMNS = [
  col('UUID', 'uuid'),
  col('Name', 'name'),
  col('Description', 'description'),
  col('Groups', 'groups'),
]

const GROUPS_EXAMPLE = `'[{"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}]'`

function registerDeployables(program: Command): void {
  const deployable = program
    .command('deployable')
    .description(
      'v2 deployables: the allocatable parts of devices (an FPGA region, a VF, a whole card)',
    )
  client(deployable.command('list').description('list deployables')).action(
    action(async (f) => {
      const body = await apiRequest<{ deployables: Row[] }>(f, 'GET', '/v2/deployables', {
        version: V2_VERSION,
      })
      print(f.format, body.deployables, DEPLOYABLE_COLUMNS)
    }),
  )
  client(
    deployable
      .command('show')
      .description('show one deployable')
      .argument('<uuid>', 'the deployable'),
  ).action(
    action(async (f, [uuid]) =>
      print(
        f.format,
        await apiRequest<Row>(f, 'GET', `/v2/deployables/${encodeURIComponent(uuid!)}`, {
          version: V2_VERSION,
        }),
        [],
      ),
    ),
  )
  registerProgram(deployable)
}

function registerDeviceProfiles(program: Command): void {
  const profile = program
    .command('device-profile')
    .description(
      'v2 device profiles: named kinds of accelerators (resource class, traits) that requests and Nova flavors name',
    )
  client(profile.command('list').description('list device profiles')).action(
    action(async (f) => {
      const body = await apiRequest<{ device_profiles: Row[] }>(f, 'GET', '/v2/device_profiles', {
        version: V2_VERSION,
      })
      print(f.format, body.device_profiles, PROFILE_COLUMNS)
    }),
  )
  client(
    profile
      .command('show')
      .description('show one device profile')
      .argument('<uuid-or-name>', 'the profile, by uuid or by name'),
  ).action(
    action(async (f, [value]) => {
      const body = await apiRequest<{ device_profile?: Row } & Row>(
        f,
        'GET',
        `/v2/device_profiles/${encodeURIComponent(value!)}`,
        { version: V2_VERSION },
      )
      print(f.format, body.device_profile ?? body, [])
    }),
  )
  client(
    profile
      .command('create')
      .description(
        'create a device profile (as `openstack accelerator device profile create` does)',
      )
      .argument(
        '<name>',
        'the profile name, unique; ARQ creation and Nova flavors (accel:device_profile) refer to it',
      )
      .argument(
        '<groups>',
        `the groups as a JSON list of objects, e.g. ${GROUPS_EXAMPLE}; each group asks for resources:<RC> units with trait:<T> required|forbidden`,
      ),
  )
    .option('--description <text>', 'a description, at most 255 characters')
    .action(
      action<ClientFlags & { description?: string }>(async (f, [name, groupsText]) => {
        const groups = parseJson('<groups>', groupsText!, GROUPS_EXAMPLE)
        if (!Array.isArray(groups))
          throw new CliError(`<groups> must be a JSON list of objects, e.g. ${GROUPS_EXAMPLE}`)
        const body = [{ name, groups, description: f.description ?? null }]
        print(
          f.format,
          await apiRequest<Row>(f, 'POST', '/v2/device_profiles', { version: V2_VERSION, body }),
          [],
        )
      }),
    )
  client(
    profile
      .command('delete')
      .description(
        'delete device profiles; each is deleted on its own, and the ones that fail are named',
      )
      .argument('<uuid-or-name...>', 'the profiles, by uuid or by name'),
  ).action(
    action((f, values) =>
      deleteEach(
        f,
        values,
        (value) => `/v2/device_profiles/${encodeURIComponent(value)}`,
        V2_VERSION,
      ),
    ),
  )
}

/** Registers `deployable …` and `device-profile …`. */
export function registerResourceCommands(program: Command): void {
  registerDeployables(program)
  registerDeviceProfiles(program)
}
