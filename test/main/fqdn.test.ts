import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { fullyQualifiedName } from '../../src/main/fqdn.js'

void describe('fully qualified name (default [agent] resource_provider_name)', () => {
  void it('falls back to the plain name when the resolver knows no dotted one', async () => {
    assert.equal(await fullyQualifiedName('no-such-host.invalid'), 'no-such-host.invalid')
    assert.equal(await fullyQualifiedName('localhost'), 'localhost')
  })

  void it('answers for this machine, with its host name at least', async () => {
    const name = await fullyQualifiedName()
    assert.ok(name === hostname() || name.startsWith(`${hostname()}.`) || name.includes('.'), name)
  })
})
