import { Option, type Command } from 'commander';
import { PostroomError } from '../../errors.js';
import { getDeliveryEvidence } from '../../inbox/evidence-queries.js';
import { getInboxEvent, listInbox } from '../../inbox/read-queries.js';
import { INBOX_STATUSES } from '../../inbox/types.js';
import type { CliContext } from '../context.js';
import { parseChoice, parseCount, parseDuration } from '../duration.js';
import { printJson, printTable } from '../output.js';

/** The `inbox` command group; the worker adds stats, replay and prune to it. */
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
    .addHelpText('after', `\nExamples:\n  $ postroom inbox list --status quarantined\n  $ postroom inbox list --type participant.acted --since 1h --json | jq length`)
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
      if (!row) throw new PostroomError('not_found', `No event ${eventId} in the inbox. List recent ones with \`postroom inbox list\`.`);
      const evidence = opts.raw || opts.signature ? await getDeliveryEvidence(db, eventId) : undefined;
      if (opts.raw && !evidence?.rawBody) {
        throw new PostroomError(
          'not_found',
          evidence?.prunedAt ? `The raw bytes of ${eventId} were pruned at ${evidence.prunedAt.toISOString()}.` : `No raw bytes are stored for ${eventId} (it did not arrive as a webhook delivery).`,
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
      for (const [k, v] of Object.entries({ ...rest, ...extra })) ctx.io.stdout.write(`${k.padEnd(18)} ${v instanceof Date ? v.toISOString() : (v ?? '')}\n`);
      ctx.io.stdout.write(`headers            ${JSON.stringify(headers)}\npayload\n${JSON.stringify(payload, null, 2)}\n`);
    });
  return inbox;
}
