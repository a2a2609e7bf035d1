import { Option, type Command } from 'commander';
import { PostroomError } from '../../errors.js';
import { INBOX_STATUSES } from '../../inbox/types.js';
import { countPrunable, inboxStats, prunePage } from '../../worker/inbox-admin-queries.js';
import { previewReplay, replayEvent, replayMatching } from '../../worker/replay.js';
import type { CliContext } from '../context.js';
import { parseChoice, parseDuration } from '../duration.js';
import { createProgress, printJson, printTable } from '../output.js';

const REPLAYABLE_STATUSES = ['dead', 'quarantined'] as const;

/** Adds stats, replay and prune to the `inbox` command group. */
export function registerWorkerInboxCommands(program: Command, ctx: CliContext): void {
  const inbox = program.commands.find((c) => c.name() === 'inbox');
  if (!inbox) throw new PostroomError('cli_wiring', 'the inbox command group must be registered before the worker commands');
  registerStats(inbox, ctx);
  registerReplay(inbox, ctx);
  registerPrune(inbox, ctx);
}

function registerStats(inbox: Command, ctx: CliContext): void {
  inbox
    .command('stats')
    .description('Counts by status and by type, and the age of the oldest unprocessed event.')
    .option('--json', 'print the numbers as JSON')
    .addHelpText('after', `\nExamples:\n  $ postroom inbox stats\n  $ postroom inbox stats --json | jq .by_status.dead`)
    .action(async (opts: { json?: boolean }) => {
      const stats = await inboxStats(await ctx.db());
      if (opts.json) {
        printJson(ctx.io, stats);
        return;
      }
      const statuses = INBOX_STATUSES.filter((s) => (stats.by_status[s] ?? 0) > 0);
      printTable(
        ctx.io,
        [...Object.entries(stats.by_type).map(([type, counts]) => ({ type, ...counts })), { type: 'TOTAL', ...stats.by_status }],
        ['type', ...statuses],
      );
      const o = stats.oldest_unprocessed;
      ctx.io.stdout.write(o ? `\noldest unprocessed: ${o.event_id}, received ${formatAge(o.age_seconds)} ago (${o.received_at})\n` : '\nnothing waiting to be processed\n');
    });
}

function registerReplay(inbox: Command, ctx: CliContext): void {
  inbox
    .command('replay [event_id]')
    .description('Run events again: one by id, or every dead or quarantined event matching the filters. Attempts start from zero; the previous outcome is kept in last_error.')
    .addOption(new Option('--status <status>', 'replay every event with this status').choices(REPLAYABLE_STATUSES))
    .option('--type <type>', 'only this event type (with --status)')
    .option('--since <duration>', 'only events received within this window, e.g. 24h (with --status)')
    .option('--dry-run', 'count what would be replayed, change nothing')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom inbox replay evt_01HZX3K9Q7                 one event, whatever became of it
  $ postroom inbox replay --status dead --dry-run         how many would run again
  $ postroom inbox replay --status dead --type participant.acted --since 24h
  $ postroom inbox replay --status quarantined            re-validated first; still-invalid ones stay quarantined

A running worker picks replayed events up at once (postroom serve, or your own process).`,
    )
    .action(async (eventId: string | undefined, opts: { status?: string; type?: string; since?: string; dryRun?: boolean; json?: boolean }) => {
      if (eventId !== undefined && (opts.status || opts.type || opts.since)) {
        throw new PostroomError('invalid_flag', 'Give either an event id or --status (with --type/--since), not both.');
      }
      if (eventId === undefined && !opts.status) {
        throw new PostroomError('invalid_flag', 'Give an event id, or --status dead|quarantined to replay many (see --help).');
      }
      const db = await ctx.db();

      if (eventId !== undefined) {
        if (opts.dryRun) {
          const d = await previewReplay(db, eventId);
          const verdict = d.action === 'reset' ? 'would replay' : d.action === 'still_invalid' ? `would stay quarantined (${d.reason}):` : `cannot replay (${d.reason}):`;
          ctx.io.stdout.write(`${verdict} ${eventId} (dry run: nothing changed)\n`);
          return;
        }
        const result = await replayEvent(db, eventId);
        if (opts.json) printJson(ctx.io, { event_id: eventId, ...result });
        else if (result.outcome === 'replayed') ctx.io.stdout.write(`replayed ${eventId} (was ${result.from_status}); follow it with: postroom inbox show ${eventId}\n`);
        else ctx.io.stdout.write(`${eventId} is still invalid and stays quarantined: ${result.reason}\n`);
        if (result.outcome === 'still_invalid') ctx.exitCode = 1;
        return;
      }

      const filter = {
        status: parseChoice('--status', opts.status!, REPLAYABLE_STATUSES),
        type: opts.type,
        since: opts.since === undefined ? undefined : new Date(Date.now() - parseDuration('--since', opts.since)),
      };
      const progress = createProgress(ctx.io, 'replay');
      const summary = await replayMatching(db, filter, { dryRun: opts.dryRun === true, onProgress: (done, total) => progress.update(`${done}/${total}`) });
      progress.done();
      if (opts.json) {
        printJson(ctx.io, summary);
        return;
      }
      if (summary.dry_run) {
        ctx.io.stdout.write(`would replay up to ${summary.matched} ${filter.status} event(s) (dry run: nothing changed)\n`);
        return;
      }
      ctx.io.stdout.write(`matched ${summary.matched}, replayed ${summary.replayed}${summary.still_invalid ? `, still invalid ${summary.still_invalid}` : ''}\n`);
      for (const ex of summary.invalid_examples) ctx.io.stdout.write(`  ${ex.event_id}: ${ex.reason}\n`);
    });
}

function registerPrune(inbox: Command, ctx: CliContext): void {
  inbox
    .command('prune')
    .description('Drop the payloads of processed and skipped events older than a cut-off. Rows and ids stay: they are what de-duplicates a late redelivery.')
    .requiredOption('--older-than <duration>', 'finished longer ago than this, e.g. 30d')
    .option('--dry-run', 'count what would be pruned, change nothing')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `\nExamples:\n  $ postroom inbox prune --older-than 30d --dry-run\n  $ postroom inbox prune --older-than 90d`)
    .action(async (opts: { olderThan: string; dryRun?: boolean; json?: boolean }) => {
      const olderThanMs = parseDuration('--older-than', opts.olderThan);
      const db = await ctx.db();
      const total = await countPrunable(db, olderThanMs);
      if (opts.dryRun) {
        if (opts.json) printJson(ctx.io, { prunable: total, dry_run: true });
        else ctx.io.stdout.write(`would prune ${total} event payload(s) finished more than ${opts.olderThan} ago (dry run: nothing changed)\n`);
        return;
      }
      const progress = createProgress(ctx.io, 'prune');
      let pruned = 0;
      let after: string | null = null;
      for (;;) {
        const page = await prunePage(db, olderThanMs, after, 5000);
        pruned += page.pruned;
        progress.update(`${pruned}/${total}`);
        if (page.lastId === null) break;
        after = page.lastId;
      }
      progress.done();
      if (opts.json) printJson(ctx.io, { pruned, dry_run: false });
      else ctx.io.stdout.write(`pruned ${pruned} event payload(s); their ids are kept for de-duplication\n`);
    });
}

function formatAge(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}
