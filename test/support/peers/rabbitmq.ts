/**
 * RabbitMQ for tests: is a broker reachable, and a fresh virtual host per test file (made with
 * rabbitmqctl on this machine), so that durable topic queues never leak between runs. With
 * CYBORG_REQUIRE_SERVICES=1 (CI) an unreachable broker, or a broker rabbitmqctl cannot manage, is
 * an error instead of a skip. CYBORG_TEST_TRANSPORT_URL points at another broker (rabbit://…).
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'amqplib'
import { parseTransportUrl, type BrokerAddress } from '../../../src/bus/transport-url.js'
import { errorMessage } from '../../../src/domain/error-message.js'

export const TEST_TRANSPORT_URL =
  process.env.CYBORG_TEST_TRANSPORT_URL ?? 'rabbit://guest:guest@127.0.0.1:5672/'
const servicesRequired = process.env.CYBORG_REQUIRE_SERVICES === '1'

export interface TestVhost {
  /** `rabbit://guest:guest@127.0.0.1:5672/cyborg_t_…`: the transport URL of the fresh vhost. */
  url: string
  name: string
  /** Closes every client connection of this vhost from the broker's side (CONNECTION_FORCED). */
  closeConnections(): Promise<void>
  /** Deletes a queue behind the clients' backs, as an operator might. */
  deleteQueue(queue: string): Promise<void>
  /** Grants or revokes the test user's access: revoked, every (re)connection is refused. */
  setAccess(allowed: boolean): Promise<void>
  /** Deletes the vhost with its queues and exchanges. */
  drop(): Promise<void>
}

export interface TestBroker {
  /** Why RabbitMQ tests cannot run here; undefined when they can. */
  skip: string | undefined
  createVhost(): Promise<TestVhost>
}

let cached: Promise<TestBroker> | undefined

/** The broker to test against; rejects (under CYBORG_REQUIRE_SERVICES=1) when it is unusable. */
export function testBroker(): Promise<TestBroker> {
  cached ??= discover()
  return cached
}

async function discover(): Promise<TestBroker> {
  const broker = parseTransportUrl(TEST_TRANSPORT_URL)[0]!
  let skip = await probe(broker)
  if (skip === undefined) {
    const ctl = await rabbitmqctl(['-q', 'list_vhosts', 'name']).then(
      (out) => {
        void removeStale(out)
        return undefined
      },
      (err: Error) =>
        `rabbitmqctl cannot manage the broker (fresh vhosts need it): ${err.message.split('\n')[0]}`,
    )
    skip = ctl
  }
  if (skip !== undefined && servicesRequired)
    throw new Error(`CYBORG_REQUIRE_SERVICES=1 but ${skip}`)
  return {
    skip,
    async createVhost() {
      const name = `cyborg_t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
      await rabbitmqctl(['-q', 'add_vhost', name])
      const user = broker.username ?? 'guest'
      const grant = () =>
        rabbitmqctl(['-q', 'set_permissions', '-p', name, user, '.*', '.*', '.*']).then(() => {})
      await grant()
      // Everything before the vhost: the first '/' after the hosts (after the last '@', if any).
      const hostsStart = Math.max(TEST_TRANSPORT_URL.lastIndexOf('@') + 1, 'rabbit://'.length)
      const slash = TEST_TRANSPORT_URL.indexOf('/', hostsStart)
      const base = slash < 0 ? TEST_TRANSPORT_URL : TEST_TRANSPORT_URL.slice(0, slash)
      return {
        name,
        url: `${base}/${name}`,
        closeConnections: () =>
          rabbitmqctl(['-q', 'close_all_connections', '-p', name, 'test']).then(() => {}),
        deleteQueue: (queue) =>
          rabbitmqctl(['-q', 'delete_queue', '-p', name, queue]).then(() => {}),
        setAccess: (allowed) =>
          allowed
            ? grant()
            : rabbitmqctl(['-q', 'clear_permissions', '-p', name, user]).then(() => {}),
        drop: () => rabbitmqctl(['-q', 'delete_vhost', name]).then(() => {}),
      }
    },
  }
}

async function probe(broker: BrokerAddress): Promise<string | undefined> {
  try {
    const model = await connect(
      {
        protocol: 'amqp',
        hostname: broker.hostname,
        port: broker.port,
        username: broker.username ?? 'guest',
        password: broker.password ?? 'guest',
        vhost: encodeURIComponent(broker.vhost),
      },
      { timeout: 2000 },
    )
    await model.close()
    return undefined
  } catch (err) {
    return `RabbitMQ unreachable at ${broker.hostname}:${broker.port}: ${errorMessage(err)}`
  }
}

function rabbitmqctl(args: string[]): Promise<string> {
  const run = (bin: string) =>
    new Promise<string>((resolve, reject) => {
      execFile(bin, args, { timeout: 20_000 }, (err, stdout, stderr) => {
        if (err)
          reject(
            Object.assign(new Error(`rabbitmqctl ${args.join(' ')}: ${stderr || err.message}`), {
              code: (err as NodeJS.ErrnoException).code,
            }),
          )
        else resolve(stdout)
      })
    })
  return run('rabbitmqctl').catch((err: NodeJS.ErrnoException) =>
    err.code === 'ENOENT' ? run('/usr/sbin/rabbitmqctl') : Promise.reject(err),
  )
}

/** Vhosts of test runs that died more than an hour ago. */
async function removeStale(list: string): Promise<void> {
  const hourAgo = Date.now() - 3600_000
  for (const name of list.split('\n').map((l) => l.trim())) {
    const m = /^cyborg_t_([0-9a-z]+)_[0-9a-f]+$/.exec(name)
    if (m?.[1] && parseInt(m[1], 36) < hourAgo)
      await rabbitmqctl(['-q', 'delete_vhost', name]).catch(() => {})
  }
}
