import { test } from 'node:test'
import assert from 'node:assert/strict'
import { arqEvent, type ArqFacts } from '../../domain/events.js'
import { insertEvents } from '../outbox/events.js'
import { testDialects } from '../../../test/support/db.js'
import { arqFailureReasons } from './arq-reasons.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000001'
const B = 'aaaaaaaa-0000-4000-8000-000000000002'
const C = 'aaaaaaaa-0000-4000-8000-000000000003'
const at = (s: number) => `2026-01-01T00:00:0${s}.000000+00:00`

const facts = (uuid: string, state: string): ArqFacts => ({
  uuid,
  state,
  deviceProfileName: 'dp',
  deviceProfileGroupId: 0,
  projectId: null,
  hostname: 'h',
  deviceRpUuid: null,
  instanceUuid: null,
  attachHandle: null,
})

for (const dialect of await testDialects()) {
  await test(
    `arq failure reasons: the newest failure event's, per request, on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const db = handle.db
        await insertEvents(db, [
          arqEvent('bind_failed', facts(A, 'BindFailed'), at(1), 'no fit on h: first'),
          arqEvent('bound', facts(B, 'Bound'), at(2)),
          arqEvent('bind_failed', facts(A, 'BindFailed'), at(3), 'no fit on h: second'),
          arqEvent('unbind_failed', facts(B, 'UnbindFailed'), at(4), 'agent on h refused'),
          arqEvent('created', facts(C, 'Initial'), at(5)),
        ])
        const reasons = await arqFailureReasons(db, [A, B, C, A])
        assert.deepEqual(Object.fromEntries(reasons), {
          [A]: 'no fit on h: second',
          [B]: 'agent on h refused',
        })
        assert.equal((await arqFailureReasons(db, [])).size, 0)
      } finally {
        await handle.close()
      }
    },
  )
}
