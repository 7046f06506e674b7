/**
 * The handle every read takes: Kysely without insert, update, delete or transactions (defined in
 * src/db/core/connection.ts). Named here so that src/api, which may import only src/db/reads/, can
 * hold one.
 */
export type { ReadDb } from '../core/connection.js'
