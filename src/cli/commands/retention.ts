import type { Command } from 'commander';
import { restoreArchive } from '../../inbox/archive.js';
import { runRetention, type RetentionReport } from '../../inbox/retention.js';
import { parseRetention } from '../../config/config.js';
import type { CliContext } from '../context.js';
import { createProgress, printJson, printTable } from '../output.js';

/** `postroom retention run` and `postroom archive restore`: the inbox's history by whole days. */
export function registerRetentionCommands(program: Command, ctx: CliContext): void {
  const retention = program
    .command('retention')
    .description('Drop whole days of inbox history past POSTROOM_RETENTION; ids stay in the ledger, so redeliveries stay duplicates.');
  retention
    .command('run')
    .description('Drop every day of history older than the retention (DETACH, then DROP), keeping any day with events that need work.')
    .option('--dry-run', 'list what would be dropped and what is kept, and why; change nothing')
    .option('--keep <duration>', 'days of history to keep, e.g. 90d or 13w (default: POSTROOM_RETENTION, else 90d)')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
A day (one partition of the inbox) is dropped once it ends more than the retention before today (UTC).
A day holding a received, failed, dead or quarantined event is kept, with the reason, until those events
are processed, replayed or resolved. With POSTROOM_ARCHIVE_DIR, each day is first written there as
<partition>.ndjson.gz with its .sha256; a day whose archive fails is kept. The leader (serve, roles all and
reconciler) runs this on POSTROOM_RETENTION_CRON (hourly by default). See docs/retention.md.

Examples:
  $ postroom retention run --dry-run
  $ POSTROOM_ARCHIVE_DIR=/var/lib/postroom/archive postroom retention run --json`,
    )
    .action(async (opts: { dryRun?: boolean; keep?: string; json?: boolean }) => {
      const config = ctx.config();
      const db = await ctx.db();
      const progress = createProgress(ctx.io, 'retention');
      const report = await runRetention({
        db,
        logger: ctx.logger(),
        keepDays: opts.keep === undefined ? config.retention.keepDays : parseRetention('--keep', opts.keep),
        ...(config.retention.archiveDir ? { archiveDir: config.retention.archiveDir } : {}),
        dryRun: opts.dryRun === true,
        onProgress: (message) => progress.update(message),
      });
      progress.done();
      if (opts.json) printJson(ctx.io, report);
      else printReport(ctx, report);
    });

  program
    .command('archive')
    .description('Archives of dropped days (POSTROOM_ARCHIVE_DIR).')
    .command('restore <file>')
    .description('Verify an archive against its .sha256 and put its events back into the inbox, as they were (processed stay processed).')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Restored events keep their status, so nothing is processed again; their ids are in the ledger already.
Replay one with \`postroom inbox replay <event-id>\` if you mean to. Restoring a file twice changes nothing.
A restored day older than the retention is dropped again by the next retention run.

Examples:
  $ postroom archive restore /var/lib/postroom/archive/inbox_p20260105.ndjson.gz`,
    )
    .action(async (file: string, opts: { json?: boolean }) => {
      const db = await ctx.db();
      const progress = createProgress(ctx.io, 'restore');
      const result = await restoreArchive(db, file, (rows) => progress.update(`${rows} rows`));
      progress.done();
      if (opts.json) printJson(ctx.io, result);
      else
        ctx.io.stdout.write(
          `restored ${result.restored} of ${result.rows} event(s) from ${file}; ${result.present} were in the inbox already\n`,
        );
    });
}

function printReport(ctx: CliContext, report: RetentionReport): void {
  if (report.skipped) {
    ctx.io.stdout.write('another replica is running retention now; nothing done\n');
    return;
  }
  const verb = report.dry_run ? 'would drop' : 'dropped';
  ctx.io.stdout.write(
    `keeping ${report.keep_days} days: days before ${report.cutoff_day} are past retention; ${verb} ${report.dropped.length}, kept ${report.kept.length}` +
      (report.partitions_created ? `, created ${report.partitions_created} partition(s) ahead` : '') +
      '\n',
  );
  if (report.dropped.length) {
    printTable(
      ctx.io,
      report.dropped.map((d) => ({
        partition: d.partition,
        day: d.day,
        mb: (d.bytes / 1048576).toFixed(1),
        rows_estimated: Math.max(0, d.estimated_rows),
      })),
      ['partition', 'day', 'mb', 'rows_estimated'],
    );
  }
  for (const k of report.kept) ctx.io.stdout.write(`kept ${k.partition}: ${k.reason}\n`);
}
