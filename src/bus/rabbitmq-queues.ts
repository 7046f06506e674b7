/**
 * The topic (work) queues of the RabbitMQ bus: how they are declared, classic or quorum
 * (`[oslo_messaging_rabbit] rabbit_quorum_queue`), and what a refused declaration means when the
 * queue exists with the other type, which RabbitMQ never changes (docs/bus.md, "Quorum queues").
 */
import type { Options } from 'amqplib'

/** Durable, so that calls and casts wait for a server that is not there yet. */
const CLASSIC: Options.AssertQueue = { durable: true, autoDelete: false, exclusive: false }

/** Replicated over the cluster (Raft); quorum queues are always durable, never exclusive or auto-delete. */
const QUORUM: Options.AssertQueue = { ...CLASSIC, arguments: { 'x-queue-type': 'quorum' } }

/** How servers and callers declare a topic queue; both must declare it alike, or RabbitMQ refuses the second (406). */
export function topicQueueOptions(quorum: boolean): Options.AssertQueue {
  return quorum ? QUORUM : CLASSIC
}

/** True when RabbitMQ refused a declaration because the queue exists with another `x-queue-type`. */
export function isQueueTypeMismatch(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  return e?.code === 406 && /inequivalent arg 'x-queue-type'/.test(String(e.message))
}

/** What a server logs and fails with when its queue exists with the other type: the cause and the fix. */
export function queueTypeMismatchMessage(topic: string, quorum: boolean): string {
  const [want, have] = quorum ? ['quorum', 'classic'] : ['classic', 'quorum']
  return (
    `the queue ${topic} exists as a ${have} queue, but [oslo_messaging_rabbit] rabbit_quorum_queue = ` +
    `${quorum} asks for a ${want} one, and RabbitMQ cannot change the type of a queue: stop every ` +
    `server of ${topic}, delete the queue (rabbitmqctl delete_queue ${topic} -p <vhost>) and start ` +
    `them again, or set the option back (docs/bus.md, "Quorum queues")`
  )
}
