/**
 * The database's own errors, from the three real engines, as the API answers them: a table that is
 * not there (the schema not applied yet) is a 503 that says what to run, never a 500; anything
 * else is left to the error map.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { UnavailableError } from '../../src/domain/errors.js'
import { testDialects } from '../support/db.js'
import { databaseUnavailable } from '../../src/api/database-errors.js'

for (const dialect of await testDialects()) {
  await test(
    `a missing table is a 503 naming cyborg db sync, on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const missing = await sql`select id from no_such_cyborg_table`.execute(handle.db).then(
          () => assert.fail('the table exists'),
          (e: unknown) => e,
        )
        const mapped = databaseUnavailable(missing)
        assert.ok(mapped instanceof UnavailableError, String(missing))
        assert.match(mapped.message, /no Cyborg schema yet .*no_such_cyborg_table.*cyborg db sync/)
        const syntax = await sql`select from where`.execute(handle.db).then(
          () => assert.fail('accepted'),
          (e: unknown) => e,
        )
        assert.equal(databaseUnavailable(syntax), undefined, 'a bad statement stays a bug (500)')
      } finally {
        await handle.close()
      }
    },
  )
}

test('an unreachable database is a 503; other errors are left alone', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
    code: 'ECONNREFUSED',
  })
  assert.match(databaseUnavailable(refused)?.message ?? '', /cannot be reached \(ECONNREFUSED\)/)
  assert.equal(databaseUnavailable(new Error('boom')), undefined)
  assert.equal(databaseUnavailable(undefined), undefined)
})
