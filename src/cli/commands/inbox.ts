import { Option, type Command } from 'commander';
import { PostroomError } from '../../errors.js';
import { receivedAtOf } from '../../inbox/by-id.js';
import { getDeliveryEvidence } from '../../inbox/evidence-queries.js';
import { getInboxEvent, listInbox } from '../../inbox/read-queries.js';
import { INBOX_STATUSES } from '../../inbox/types.js';
import type { CliContext } from '../context.js';
import { parseChoice, parseCount, parseDuration } from '../duration.js';
import { createProgress, printJson, printTable } from '../output.js';
import { inboxStats } from '../../inbox/admin-queries.js';
import { replayEventEntry } from '../../console/audit-queries.js';
import { recordCliAction } from '../audit.js';

/** The `inbox` command group: what was accepted (list, show) and what to do about it (stats, replay, prune). */
export function registerInboxCommands(program: Command, ctx: CliContext): Command {
  const inbox = program
    .command('inbox')
    .description('Look into the inbox: every event postroom accepted, and what became of it.')
    .addHelpText('after', `\nExamples:\n  $ postroom inbox list --status dead\n  $ postroom inbox show evt_01HZX3K9Q7 --json`);

  inbox
    .command('list')
    .description('List inbox events, newest first.')
    .addOption(new Option('--status <status>', 'only this status').choices(INBOX_STATUSES))
    .option('--type <type>', 'only this event type, e.g. participant.acted')
    .option('--since <duration>', 'only events received within this window, e.g. 24h')
    .option('--limit <n>', 'at most this many (1-10000)', '50')
    .option('--json', 'print a JSON array of records')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom inbox list --status quarantined\n  $ postroom inbox list --type participant.acted --since 1h --json | jq length`,
    )
    .action(async (opts: { status?: string; type?: string; since?: string; limit: string; json?: boolean }) => {
      const filter = {
        status: opts.status === undefined ? undefined : parseChoice('--status', opts.status, INBOX_STATUSES),
        type: opts.type,
        since: opts.since === undefined ? undefined : new Date(Date.now() - parseDuration('--since', opts.since)),
        limit: parseCount('--limit', opts.limit, { min: 1, max: 10_000 }),
      };
      const rows = await listInbox(await ctx.db(), filter);
      if (opts.json) {
        printJson(ctx.io, rows);
        return;
      }
      printTable(
        ctx.io,
        rows.map((r) => ({ ...r, last_error: r.last_error?.replace(/\s+/g, ' ') })),
        ['event_id', 'type', 'status', 'source', 'attempts', 'received_at', 'last_error'],
      );
    });

  inbox
    .command('show <event_id>')
    .description('Show one event: payload, delivery headers, attempts and errors; --raw and --signature for what the sender proved.')
    .option('--json', 'print the record as JSON')
    .option('--raw', 'print the exact bytes received and nothing else (with --json: as raw_body_base64)')
    .option('--signature', 'include the X-Service-Signature header it came with')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom inbox show evt_01HZX3K9Q7
  $ postroom inbox show quarantine:3f2a… --raw > body.bin      the bytes of a quarantined event, exactly
  $ postroom inbox show evt_01HZX3K9Q7 --signature --json`,
    )
    .action(async (eventId: string, opts: { json?: boolean; raw?: boolean; signature?: boolean }) => {
      const db = await ctx.db();
      const row = await getInboxEvent(db, eventId);
      if (!row) {
        // An id the ledger holds was received; its row went with its day (retention), and a redelivery is a duplicate.
        const received = await receivedAtOf(db, eventId);
        if (received)
          throw new PostroomError(
            'not_found',
            `${eventId} was received at ${new Date(received).toISOString()}, and its day has since been dropped by retention (POSTROOM_RETENTION); its id still de-duplicates. Restore the day's archive with \`postroom archive restore <file>\` to inspect it.`,
          );
        throw new PostroomError('not_found', `No event ${eventId} in the inbox. List recent ones with \`postroom inbox list\`.`);
      }
      const evidence = opts.raw || opts.signature ? await getDeliveryEvidence(db, eventId) : undefined;
      if (opts.raw && !evidence?.rawBody) {
        throw new PostroomError(
          'not_found',
          evidence?.prunedAt
            ? `The raw bytes of ${eventId} were pruned at ${evidence.prunedAt.toISOString()}.`
            : `No raw bytes are stored for ${eventId} (it did not arrive as a webhook delivery).`,
        );
      }
      if (opts.raw && !opts.json) {
        ctx.io.stdout.write(evidence!.rawBody!);
        return;
      }
      const extra = {
        ...(opts.signature ? { signature_header: evidence?.signatureHeader ?? null } : {}),
        ...(opts.raw ? { raw_body_base64: evidence!.rawBody!.toString('base64') } : {}),
      };
      if (opts.json) {
        printJson(ctx.io, { ...row, ...extra });
        return;
      }
      const { payload, headers, ...rest } = row;
      for (const [k, v] of Object.entries({ ...rest, ...extra }))
        ctx.io.stdout.write(`${k.padEnd(18)} ${v instanceof Date ? v.toISOString() : (v ?? '')}\n`);
      ctx.io.stdout.write(`headers            ${JSON.stringify(headers)}\npayload\n${JSON.stringify(payload, null, 2)}\n`);
    });
  registerStats(inbox, ctx);
  registerReplay(inbox, ctx);
  registerPrune(inbox);
  return inbox;
}

const REPLAYABLE_STATUSES = ['dead', 'quarantined'] as const;

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
      ctx.io.stdout.write(
        o
          ? `\noldest unprocessed: ${o.event_id}, received ${formatAge(o.age_seconds)} ago (${o.received_at})\n`
          : '\nnothing waiting to be processed\n',
      );
    });
}

function registerReplay(inbox: Command, ctx: CliContext): void {
  inbox
    .command('replay [event_id]')
    .description(
      'Run events again: one by id, or every dead or quarantined event matching the filters. Attempts start from zero; the previous outcome is kept in last_error.',
    )
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
    .action(
      async (eventId: string | undefined, opts: { status?: string; type?: string; since?: string; dryRun?: boolean; json?: boolean }) => {
        if (eventId !== undefined && (opts.status || opts.type || opts.since)) {
          throw new PostroomError('invalid_flag', 'Give either an event id or --status (with --type/--since), not both.');
        }
        if (eventId === undefined && !opts.status) {
          throw new PostroomError('invalid_flag', 'Give an event id, or --status dead|quarantined to replay many (see --help).');
        }
        if (eventId !== undefined) {
          const db = await ctx.db();
          if (opts.dryRun) {
            const { previewReplay } = await import('../../worker/replay.js');
            const d = await previewReplay(db, eventId);
            const verdict =
              d.action === 'reset'
                ? 'would replay'
                : d.action === 'still_invalid'
                  ? `would stay quarantined (${d.reason}):`
                  : `cannot replay (${d.reason}):`;
            ctx.io.stdout.write(`${verdict} ${eventId} (dry run: nothing changed)\n`);
            return;
          }
          const { replayEvent } = await import('../../worker/replay.js');
          const result = await replayEvent(db, eventId);
          await recordCliAction(ctx, replayEventEntry(eventId, result));
          if (opts.json) printJson(ctx.io, { event_id: eventId, ...result });
          else if (result.outcome === 'replayed')
            ctx.io.stdout.write(`replayed ${eventId} (was ${result.from_status}); follow it with: postroom inbox show ${eventId}\n`);
          else ctx.io.stdout.write(`${eventId} is still invalid and stays quarantined: ${result.reason}\n`);
          if (result.outcome === 'still_invalid') ctx.exitCode = 1;
          return;
        }

        // The flags are read before the store is opened: a mistyped one fails at once, whatever the store.
        const filter = {
          status: parseChoice('--status', opts.status!, REPLAYABLE_STATUSES),
          type: opts.type,
          since: opts.since === undefined ? undefined : new Date(Date.now() - parseDuration('--since', opts.since)),
        };
        const db = await ctx.db();
        const progress = createProgress(ctx.io, 'replay');
        const { replayMatching } = await import('../../worker/replay.js');
        const summary = await replayMatching(db, filter, {
          dryRun: opts.dryRun === true,
          onProgress: (done, total) => progress.update(`${done}/${total}`),
        });
        progress.done();
        if (!summary.dry_run)
          await recordCliAction(ctx, {
            action: 'replay_matching',
            target: [`status ${filter.status}`, filter.type && `type ${filter.type}`, opts.since && `since ${opts.since}`]
              .filter(Boolean)
              .join(', '),
            affected: summary.replayed,
            detail: {
              filter: { ...filter, since: filter.since?.toISOString() },
              matched: summary.matched,
              still_invalid: summary.still_invalid,
            },
          });
        if (opts.json) {
          printJson(ctx.io, summary);
          return;
        }
        if (summary.dry_run) {
          ctx.io.stdout.write(`would replay up to ${summary.matched} ${filter.status} event(s) (dry run: nothing changed)\n`);
          return;
        }
        ctx.io.stdout.write(
          `matched ${summary.matched}, replayed ${summary.replayed}${summary.still_invalid ? `, still invalid ${summary.still_invalid}` : ''}\n`,
        );
        for (const ex of summary.invalid_examples) ctx.io.stdout.write(`  ${ex.event_id}: ${ex.reason}\n`);
      },
    );
}

/**
 * `inbox prune` cleared old payloads with an UPDATE of every old row: bloat and vacuum work in proportion
 * to history, and no row ever left. Retention drops whole days instead (`postroom retention run`); the
 * command stays, so that a cron job or a runbook that still calls it fails saying what replaced it.
 */
function registerPrune(inbox: Command): void {
  inbox
    .command('prune')
    .description('Retired: use `postroom retention run` (POSTROOM_RETENTION), which drops whole days of history.')
    .allowUnknownOption()
    .allowExcessArguments()
    .addHelpText(
      'after',
      `\nRetention drops whole days of the inbox once they are older than POSTROOM_RETENTION (default 90d);
ids stay in the ledger, so redeliveries stay duplicates. See docs/retention.md.

Examples:
  $ postroom retention run --dry-run
  $ POSTROOM_RETENTION=30d postroom retention run`,
    )
    .action(() => {
      throw new PostroomError(
        'command_retired',
        '`postroom inbox prune` is retired: retention now drops whole days of history. Run `postroom retention run --dry-run` to see what it would drop, and set POSTROOM_RETENTION (default 90d) for how long events are kept.',
      );
    });
}

function formatAge(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}
