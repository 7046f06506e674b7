/**
 * `cyborg db import-openstack` (docs/migrate-from-openstack-cyborg.md): reads a live OpenStack
 * Cyborg database (src/db/openstack-import/openstack-source.ts), plans the import against `[database] connection`
 * (src/domain/openstack-import/openstack-import.ts) and writes it in one transaction
 * (src/db/openstack-import/openstack-import-target.ts), or only prints it (`dryRun`). Refuses a target that is not
 * at the current schema, and one that holds anything unless `merge`.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import { migrationStatus } from '../../db/core/migrate.js'
import { readOpenStackSource } from '../../db/openstack-import/openstack-source.js'
import { importIntoTarget } from '../../db/openstack-import/openstack-import-target.js'
import { ConfigError, ConflictError } from '../../domain/errors.js'
import { planImport, unmappedRows } from '../../domain/openstack-import/openstack-import.js'
import {
  IMPORT_TABLES,
  type ImportPlan,
} from '../../domain/openstack-import/openstack-import-plan.js'
import { formatTimestamp, systemClock, type Clock } from '../../domain/time.js'
import { redactUrl } from '../../db/core/connection.js'

export interface ImportOptions {
  /** The OpenStack Cyborg database: `mysql+pymysql://…`, `mysql://…` or `postgresql://…`. */
  from: string
  /** Plan and print only; write nothing. @default false */
  dryRun?: boolean
  /** Import into a target that holds rows, leaving out those whose uuid (or unique value) it has. @default false */
  merge?: boolean
  /** @default systemClock */
  clock?: Clock
}

export interface ImportReport {
  source: string
  target: string
  dryRun: boolean
  merge: boolean
  plan: ImportPlan
}

/** Runs the import; resolves with what was (or, for a dry run, would be) brought over. */
export async function runOpenStackImport(
  target: DatabaseHandle,
  options: ImportOptions,
): Promise<ImportReport> {
  const { from, dryRun = false, merge = false, clock = systemClock } = options
  const status = await migrationStatus(target)
  if (status.pending.length > 0) {
    throw new ConfigError(
      `${target.safeUrl} is not at the current schema (pending: ${status.pending.join(', ')}): run cyborg db sync first`,
    )
  }
  const snapshot = await readOpenStackSource(from)
  const now = formatTimestamp(clock.now())
  const plan = await importIntoTarget(
    target.db,
    (index) => {
      if (!index.empty && !merge) {
        throw new ConflictError(
          `${target.safeUrl} already holds devices, device profiles or accelerator requests: import ` +
            `into an empty database (cyborg db sync on a new one), or pass --merge to bring only the ` +
            `rows it lacks`,
          { code: 'IMPORT_TARGET_NOT_EMPTY' },
        )
      }
      return planImport(snapshot, index, now)
    },
    { dryRun, now },
  )
  return { source: redactUrl(from), target: target.safeUrl, dryRun, merge, plan }
}

/** 0: everything brought over (or there already); 2: some rows could not be mapped. */
export function importExitCode(report: ImportReport): number {
  return unmappedRows(report.plan).length > 0 ? 2 : 0
}

/** The report for scripts (`--format json`). */
export function importReportJson(report: ImportReport) {
  const { plan } = report
  return {
    source: report.source,
    revision: plan.revision.revision,
    releases: plan.revision.releases,
    target: report.target,
    dry_run: report.dryRun,
    merge: report.merge,
    counts: plan.counts,
    not_brought_over: unmappedRows(plan).map(({ table, uuid, reason }) => ({
      table,
      uuid,
      reason,
    })),
    already_in_target: plan.skipped
      .filter((s) => s.present === true)
      .map(({ table, uuid }) => ({ table, uuid })),
    notes: plan.notes,
  }
}

/** The report for people: the revision, counts per table, every row left out with its reason, notes. */
export function renderImportReport(report: ImportReport): string {
  const { plan } = report
  const lines = [
    `source: ${report.source} (OpenStack Cyborg schema ${plan.revision.revision}: ${plan.revision.releases})`,
    `target: ${report.target}${report.dryRun ? ' (dry run: nothing written)' : ''}`,
    '',
  ]
  const rows = [
    ['TABLE', 'SOURCE', report.dryRun ? 'WOULD BRING' : 'BROUGHT', 'LEFT OUT'],
    ...IMPORT_TABLES.map((t) => {
      const c = plan.counts[t]
      return [t, String(c.source), String(c.brought), String(c.skipped)]
    }),
  ]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const r of rows)
    lines.push(
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
  const unmapped = unmappedRows(plan)
  const present = plan.skipped.filter((s) => s.present === true)
  if (unmapped.length > 0) {
    lines.push('', `not brought over (${unmapped.length}):`)
    for (const s of unmapped) lines.push(`  ${s.table} ${s.uuid}: ${s.reason}`)
  }
  if (present.length > 0) {
    lines.push('', `already in the target, left as they are (${present.length}):`)
    for (const s of present) lines.push(`  ${s.table} ${s.uuid}`)
  }
  if (plan.notes.length > 0) {
    lines.push('', 'notes:')
    for (const n of plan.notes) lines.push(`  ${n}`)
  }
  const brought = IMPORT_TABLES.reduce((n, t) => n + plan.counts[t].brought, 0)
  lines.push(
    '',
    `${report.dryRun ? 'would bring' : 'brought'} ${brought} row(s); ${unmapped.length} could not be mapped`,
  )
  return `${lines.join('\n')}\n`
}
