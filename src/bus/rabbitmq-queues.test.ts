/** The topic queues' declaration, classic or quorum, and how a refusal for the other type is recognised. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  isQueueTypeMismatch,
  queueTypeMismatchMessage,
  topicQueueOptions,
} from './rabbitmq-queues.js'

void test('classic: durable, no arguments; quorum: durable with x-queue-type quorum', () => {
  assert.deepEqual(topicQueueOptions(false), { durable: true, autoDelete: false, exclusive: false })
  assert.deepEqual(topicQueueOptions(true), {
    durable: true,
    autoDelete: false,
    exclusive: false,
    arguments: { 'x-queue-type': 'quorum' },
  })
})

void test("only RabbitMQ's 406 about x-queue-type is a type mismatch", () => {
  const refusal = (message: string, code = 406) => Object.assign(new Error(message), { code })
  const text =
    'Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - ' +
    "inequivalent arg 'x-queue-type' for queue 'cyborg.conductor' in vhost '/': received the value " +
    "'quorum' of type 'longstr' but current is none\""
  assert.equal(isQueueTypeMismatch(refusal(text)), true)
  assert.equal(isQueueTypeMismatch(refusal(text.replace('x-queue-type', 'durable'))), false)
  assert.equal(isQueueTypeMismatch(refusal(text, 404)), false)
  assert.equal(isQueueTypeMismatch(undefined), false)
})

void test('the message names the queue, both types, the option and the fix', () => {
  assert.equal(
    queueTypeMismatchMessage('cyborg.conductor', true),
    'the queue cyborg.conductor exists as a classic queue, but [oslo_messaging_rabbit] ' +
      'rabbit_quorum_queue = true asks for a quorum one, and RabbitMQ cannot change the type of a ' +
      'queue: stop every server of cyborg.conductor, delete the queue (rabbitmqctl delete_queue ' +
      'cyborg.conductor -p <vhost>) and start them again, or set the option back (docs/bus.md, ' +
      '"Quorum queues")',
  )
  assert.match(
    queueTypeMismatchMessage('t', false),
    /exists as a quorum queue, but .* = false asks for a classic one/,
  )
})
