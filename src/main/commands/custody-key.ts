/**
 * The custody ledger's signing key (`[custody] signing_key_file`, docs/custody.md): an Ed25519
 * private key in PKCS#8 PEM, read at the conductor's start, or generated (mode 0600, in a
 * directory created 0700 if missing) when the file does not exist yet. Its public key signs into
 * every pruning checkpoint; `cyborg custody verify --public-key` pins it.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Config } from '../../config/config.js'
import { ConfigError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'

/** Where the key lives: the option, else `<state_path>/custody-signing.key`. */
export function custodyKeyPath(config: Config): string {
  return config.custody.signing_key_file ?? join(config.DEFAULT.state_path, 'custody-signing.key')
}

/** Reads the signing key, generating it first when the file is missing. */
export function loadCustodySigningKey(file: string): KeyObject {
  try {
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
      const { privateKey } = generateKeyPairSync('ed25519')
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' })
      // 'wx': never overwrite a key another process wrote meanwhile.
      try {
        writeFileSync(file, pem, { mode: 0o600, flag: 'wx' })
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      }
    }
    const key = createPrivateKey(readFileSync(file))
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error(`an ${key.asymmetricKeyType ?? 'unknown'} key, not Ed25519`)
    return key
  } catch (err) {
    throw new ConfigError(`[custody] signing_key_file ${file}: ${errorMessage(err)}`, {
      cause: err,
    })
  }
}
