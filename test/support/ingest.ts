/**
 * Report ingestion as a fixture builder: repository tests in src/db fill a database the way the
 * conductor does (load → diff → apply, src/conductor/report-ingest.ts), which src/db itself may
 * not import.
 */
export { ingestSnapshot } from '../../src/conductor/report-ingest.js'
