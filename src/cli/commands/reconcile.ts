import type { Command } from 'commander';
import { describeError, PostroomError } from '../../errors.js';
import { systemClock } from '../../clock.js';
import { auditDelivered } from '../../reconciler/audit.js';
import { RECONCILE_DEFAULTS } from '../../reconciler/defaults.js';
import { GAP_STATUSES, getGap, ignoreGap, listGaps, type GapStatus } from '../../reconciler/gap-queries.js';
import { listCompleteness, type CompletenessMark } from '../../reconciler/completeness-queries.js';
import { knownEndpointIds, recordSentCorrespondence, type LockHolder } from '../../reconciler/state-queries.js';
import type { ReconcileSummary } from '../../reconciler/types.js';
import { apiClientFor } from '../api.js';
import type { CliContext } from '../context.js';
import { formatDuration, parseChoice, parseCount, parseDuration } from '../duration.js';
import { createProgress, printJson, printTable } from '../output.js';
import { finishCliAction, recordCliAction } from '../audit.js';

/** Exit codes a script can branch on. */
export const RECONCILE_EXIT = { clean: 0, error: 1, gaps_open: 2, auditLoss: 3, notLeader: 4 } as const;

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function registerReconcileCommands(program: Command, ctx: CliContext): void {
  registerReconcile(program, ctx);
  registerGaps(program, ctx);
  registerSent(program, ctx);
  registerAudit(program, ctx);
}

function registerReconcile(program: Command, ctx: CliContext): void {
  program
    .command('reconcile')
    .description(
      'Find every event the service could not deliver and fill the gap: walk dead deliveries, re-read correspondence, write what is missing.',
    )
    .option('--dry-run', 'report what would be found and written; change nothing')
    .option('--since <duration>', 'only dead deliveries created within this window, e.g. 24h')
    .option('--endpoint <id>', 'only this endpoint (repeatable; default: every endpoint postroom knows)', collect)
    .option(
      '--overlap <duration>',
      'look again at dead deliveries created this long before the last complete walk',
      formatDuration(RECONCILE_DEFAULTS.overlapMs),
    )
    .option(
      '--at-risk-after <duration>',
      'report pending deliveries older than this as at risk',
      formatDuration(RECONCILE_DEFAULTS.atRiskAfterMs),
    )
    .option('--concurrency <n>', 're-reads in flight (1-64)', String(RECONCILE_DEFAULTS.rereadConcurrency))
    .option('--wait <duration>', 'if another replica is reconciling, wait this long for it to finish (e.g. 2m) instead of exiting 4')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      `
A gap (a dead delivery whose event postroom lacks) is closed only with evidence tied to it:
  recovered     its correspondence was re-read after the gap was seen and synthetic events reproduce the
                missed event's effect (or the event itself arrived later)
  state_synced  its correspondence was re-read and the read model caught up, but the event itself cannot be
                reproduced (an act superseded by a later one, a claim code)
  not_consumed  nothing consumes the type: no handler, no forwarder, no projection effect
  ignored       closed by an operator with \`postroom gaps ignore\`
Everything else stays open with a reason. The service's delivery list does not name an event's file: where
several re-read files fit a gap by type and time, its evidence lists them all (attribution: type_and_time)
rather than naming one as the event's own; a claim's evidence names no file as its own (claim_pairing).

Exit codes: 0 nothing a consumer needs is open, 2 gaps remain open, 4 another replica is reconciling, 1 error.

Examples:
  $ postroom reconcile --dry-run
  $ postroom reconcile --since 24h --json | jq .gaps_open
  $ postroom reconcile --wait 5m
  $ postroom reconcile --endpoint ep_123`,
    )
    .action(
      async (opts: {
        dryRun?: boolean;
        since?: string;
        endpoint?: string[];
        overlap: string;
        atRiskAfter: string;
        concurrency: string;
        wait?: string;
        json?: boolean;
      }) => {
        const options = {
          dryRun: Boolean(opts.dryRun),
          ...(opts.since ? { since: new Date(Date.now() - parseDuration('--since', opts.since)) } : {}),
          ...(opts.endpoint ? { endpoints: opts.endpoint } : {}),
          overlapMs: parseDuration('--overlap', opts.overlap),
          atRiskAfterMs: parseDuration('--at-risk-after', opts.atRiskAfter),
          rereadConcurrency: parseCount('--concurrency', opts.concurrency, { min: 1, max: 64 }),
          ...(opts.wait ? { waitMs: parseDuration('--wait', opts.wait) } : {}),
        };
        const api = await apiClientFor(ctx);
        const db = await ctx.db();
        const progress = createProgress(ctx.io, 'reconcile');
        const { createReconciler, reconcileDefaults } = await import('../../reconciler/reconcile.js');
        const reconciler = createReconciler({
          db,
          api,
          logger: ctx.logger(),
          clock: systemClock,
          defaults: reconcileDefaults(ctx.config()),
        });
        // A run started by hand is an operator's action, recorded like the console's "Reconcile now".
        const auditId = options.dryRun ? undefined : await recordCliAction(ctx, { action: 'reconcile', detail: { started: true } });
        let result: Awaited<ReturnType<typeof reconciler.run>>;
        try {
          result = await reconciler.run({
            ...options,
            onProgress: (p) =>
              progress.update(
                `${p.phase} ${p.endpointId ?? ''} pages ${p.pages}, deliveries ${p.deliveries_scanned}, re-read ${p.correspondences_reread}`,
              ),
          });
        } catch (err) {
          progress.done();
          await finishCliAction(ctx, auditId, null, { outcome: 'failed', error: describeError(err).slice(0, 300) });
          throw err;
        }
        progress.done();
        await finishCliAction(
          ctx,
          auditId,
          result.ran ? result.summary.gaps_found : 0,
          result.ran
            ? { outcome: result.summary.outcome, run_id: result.summary.run_id, gaps_open: result.summary.gaps_open }
            : { outcome: 'not_leader', holder: result.holder?.holder ?? null },
        );
        if (!result.ran) {
          printNotLeader(ctx, result.holder, opts.json);
          ctx.exitCode = RECONCILE_EXIT.notLeader;
          return;
        }
        const s = result.summary;
        if (opts.json) printJson(ctx.io, s);
        else printSummary(ctx, s);
        ctx.exitCode = s.gaps_open > 0 ? RECONCILE_EXIT.gaps_open : RECONCILE_EXIT.clean;
      },
    );
}

function printNotLeader(ctx: CliContext, h: LockHolder | undefined, json: boolean | undefined): void {
  if (json) {
    printJson(ctx.io, { ran: false, reason: 'not_leader', holder: h ? { holder: h.holder, since: h.started_at, run_id: h.run_id } : null });
    return;
  }
  ctx.io.stdout.write(
    h
      ? `another replica is reconciling: ${h.holder ?? 'unknown'} (run ${h.run_id}) since ${h.started_at.toISOString()}; nothing done. Wait for it with --wait <duration>.\n`
      : 'another replica is reconciling right now; nothing done. Wait for it with --wait <duration>.\n',
  );
}

function printSummary(ctx: CliContext, s: ReconcileSummary): void {
  ctx.io.stdout.write(
    `${s.dry_run ? 'DRY RUN: nothing was written\n' : ''}` +
      `endpoints            ${s.endpoints.join(', ') || '(none known)'}\n` +
      `pages                ${s.pages}\n` +
      `deliveries scanned   ${s.deliveries_scanned} (${s.deliveries_skipped} already examined)\n` +
      `gaps found           ${s.gaps_found}\n` +
      `gaps recovered       ${s.gaps_recovered}\n` +
      `gaps state synced    ${s.gaps_state_synced}\n` +
      `gaps not consumed    ${s.gaps_not_consumed}\n` +
      `gaps open            ${s.gaps_open}\n` +
      `at risk (pending)    ${s.at_risk.count}\n` +
      completeThroughLines(s.complete_through) +
      `re-read              ${s.correspondences_reread}${s.reread_failures.length ? ` (${s.reread_failures.length} failed)` : ''} (${s.reread_source === 'listing' ? 'changed files from the service listing' : 'no listing: the files postroom knows'})\n` +
      `synthetic events     ${s.dry_run ? `${s.synthetic_events_planned} would be written` : `${s.synthetic_events_written} written`}\n` +
      `duration             ${(s.duration_ms / 1000).toFixed(1)} s\n` +
      (s.gaps_open ? `\nOpen gaps need a look: postroom gaps list --status open\n` : ''),
  );
}

/** One line per endpoint: the instant before which every delivery is in the inbox or explained. */
function completeThroughLines(marks: Record<string, string | null>): string {
  return Object.entries(marks)
    .map(([endpoint, at]) => `complete through     ${at ?? 'not proved yet'} (${endpoint})\n`)
    .join('');
}

/** Above the gaps: how far each endpoint is proved complete, most lagging first. */
function completenessHeader(marks: readonly CompletenessMark[]): string {
  if (marks.length === 0) return 'complete through: not proved yet (run `postroom reconcile`)\n\n';
  return (
    marks
      .map((m) => `complete through ${m.complete_through.toISOString()}  ${m.endpoint_id} (${m.plane}, proved by run ${m.run_id ?? '-'})\n`)
      .join('') + '\n'
  );
}

function registerGaps(program: Command, ctx: CliContext): void {
  const gaps = program
    .command('gaps')
    .description('Events the service gave up delivering that postroom does not have, and what became of them.')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom gaps list --status open\n  $ postroom gaps ignore 42 --reason "test traffic from the old staging endpoint"`,
    );

  gaps
    .command('list')
    .description('List gaps, newest first.')
    .option('--status <status>', GAP_STATUSES.join(' | '))
    .option('--limit <n>', 'at most this many (1-10000)', '100')
    .option('--json', 'print a JSON array')
    .addHelpText('after', `\nExample:\n  $ postroom gaps list --status open --json`)
    .action(async (opts: { status?: string; limit: string; json?: boolean }) => {
      const status = opts.status === undefined ? undefined : parseChoice<GapStatus>('--status', opts.status, GAP_STATUSES);
      const limit = parseCount('--limit', opts.limit, { min: 1, max: 10_000 });
      const db = await ctx.db();
      const rows = await listGaps(db, { status, limit });
      if (opts.json) printJson(ctx.io, rows);
      else {
        ctx.io.stdout.write(completenessHeader(await listCompleteness(db, 50)));
        printTable(ctx.io, rows, ['gap_id', 'status', 'event_type', 'event_id', 'endpoint_id', 'first_seen_at', 'reason']);
      }
    });

  gaps
    .command('show <id>')
    .description('Show one gap, by gap id or event id.')
    .option('--json', 'print as JSON')
    .addHelpText('after', `\nExample:\n  $ postroom gaps show 42`)
    .action(async (id: string, opts: { json?: boolean }) => {
      const gap = await getGap(await ctx.db(), id);
      if (!gap) throw new PostroomError('not_found', `No gap ${id}. List them with \`postroom gaps list\`.`);
      if (opts.json) printJson(ctx.io, gap);
      else
        for (const [k, v] of Object.entries(gap)) {
          const shown = v instanceof Date ? v.toISOString() : v !== null && typeof v === 'object' ? JSON.stringify(v) : (v ?? '');
          ctx.io.stdout.write(`${k.padEnd(20)} ${shown}\n`);
        }
    });

  gaps
    .command('ignore <id>')
    .description('Close an open gap on purpose, with the reason on record.')
    .requiredOption('--reason <text>', 'why this gap needs no recovery (kept with the gap)')
    .option('--json', 'print the updated gap as JSON')
    .addHelpText('after', `\nExample:\n  $ postroom gaps ignore 42 --reason "campaign events are not used by our backend"`)
    .action(async (id: string, opts: { reason: string; json?: boolean }) => {
      if (!/^\d{1,18}$/.test(id))
        throw new PostroomError(
          'invalid_flag',
          `gap id: expected the numeric gap id shown by \`postroom gaps list\`, got "${id.slice(0, 40)}"`,
        );
      if (opts.reason.trim().length < 3) throw new PostroomError('invalid_flag', '--reason: say why, in a few words');
      const gap = await ignoreGap(await ctx.db(), Number(id), opts.reason.trim());
      if (!gap) throw new PostroomError('not_found', `No open gap ${id}. See \`postroom gaps show ${id}\`.`);
      await recordCliAction(ctx, {
        action: 'ignore_gap',
        target: String(gap.gap_id),
        affected: 1,
        detail: { reason: opts.reason.trim(), event_id: gap.event_id },
      });
      if (opts.json) printJson(ctx.io, gap);
      else ctx.io.stdout.write(`gap ${gap.gap_id} ignored: ${gap.reason}\n`);
    });
}

function registerSent(program: Command, ctx: CliContext): void {
  const sent = program
    .command('sent')
    .description('The sent ledger: correspondence your backend created, so reconcile can re-read it even when the service has no listing.');

  sent
    .command('record [ids...]')
    .description('Record correspondence ids your backend sent (arguments, or one per line on stdin with -).')
    .option('--json', 'print what was recorded as JSON')
    .addHelpText(
      'after',
      `\nFor backends that do not send through postroom's client.\n\nExamples:\n  $ postroom sent record cor_123 cor_456\n  $ my-export-ids | postroom sent record -`,
    )
    .action(async (given: string[], opts: { json?: boolean }) => {
      let ids = given;
      if (ids.length === 1 && ids[0] === '-') ids = (await readAll(ctx.io.stdin)).split(/\r?\n/);
      ids = [...new Set(ids.map((i) => i.trim()).filter((i) => i !== ''))];
      if (ids.length === 0)
        throw new PostroomError(
          'invalid_argument',
          'no correspondence ids given: pass them as arguments, or `-` to read one per line from stdin',
        );
      // Ids are bounded like ingress bounds them; no spaces or control characters (code points below 0x20).
      const bad = ids.find((i) => i.length > 256 || /\s/.test(i) || [...i].some((ch) => ch.charCodeAt(0) < 0x20));
      if (bad !== undefined)
        throw new PostroomError(
          'invalid_argument',
          `not a correspondence id: "${bad.slice(0, 40)}" (no spaces or control characters, at most 256 characters)`,
        );
      await recordSentCorrespondence(await ctx.db(), ids, 'cli');
      if (opts.json) printJson(ctx.io, { recorded: ids.length });
      else ctx.io.stdout.write(`recorded ${ids.length} correspondence id(s) in the sent ledger\n`);
    });
}

function registerAudit(program: Command, ctx: CliContext): void {
  program
    .command('audit')
    .description('Prove nothing was lost: every delivery the service marks delivered must be in the inbox. Non-zero is an alarm.')
    .option('--since <duration>', 'window to check, e.g. 24h', '24h')
    .option('--endpoint <id>', 'only this endpoint (repeatable)', collect)
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `\nExit codes: 0 nothing missing, 3 events missing, 1 error.\n\nExamples:\n  $ postroom audit --since 24h\n  $ postroom audit --since 7d --json | jq .missing_count`,
    )
    .action(async (opts: { since: string; endpoint?: string[]; json?: boolean }) => {
      const since = new Date(Date.now() - parseDuration('--since', opts.since));
      const api = await apiClientFor(ctx);
      const db = await ctx.db();
      let endpoints = opts.endpoint ?? (await knownEndpointIds(db, api.plane));
      if (endpoints.length === 0) {
        endpoints = [];
        for await (const e of api.webhookEndpoints.iterate({ limit: 100 })) endpoints.push(e.endpoint_id);
      }
      const progress = createProgress(ctx.io, 'audit');
      const result = await auditDelivered(db, api, {
        since,
        endpoints,
        onProgress: (n) => progress.update(`${n} delivered deliveries checked`),
      });
      progress.done();
      if (opts.json) printJson(ctx.io, result);
      else {
        ctx.io.stdout.write(
          `checked ${result.in_window} delivered deliveries since ${result.since} across ${endpoints.length} endpoint(s): ${result.missing_count} missing\n`,
        );
        if (result.missing_count) {
          printTable(ctx.io, result.missing, ['event_id', 'event_type', 'endpoint_id', 'delivery_id', 'delivered_at']);
          ctx.io.stdout.write(
            '\nALARM: the service believes these were delivered but postroom has no record. See docs/runbook.md#audit-loss.\n',
          );
        }
      }
      ctx.exitCode = result.missing_count > 0 ? RECONCILE_EXIT.auditLoss : RECONCILE_EXIT.clean;
    });
}

async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<string> {
  if (!stream) return '';
  let out = '';
  for await (const chunk of stream) out += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
  return out;
}
