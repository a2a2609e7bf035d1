import type { Command } from 'commander';
import { systemClock } from '../../clock.js';
import { PROBE_DEFAULTS } from '../../probe/defaults.js';
import type { ProbeReport } from '../../probe/probe.js';
import { apiClientFor } from '../api.js';
import type { CliContext } from '../context.js';
import { formatDuration, parseDuration } from '../duration.js';
import { printJson, printTable } from '../output.js';

/** Exit codes a script can branch on. */
export const PROBE_EXIT = { ok: 0, error: 1, failed: 2, skipped: 4 } as const;

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function registerProbeCommand(program: Command, ctx: CliContext): void {
  program
    .command('probe')
    .description(
      'Prove the pipe works end to end now: ask the service to send webhook.test to each active endpoint and wait until postroom has verified and stored it.',
    )
    .option('--timeout <duration>', 'how long to wait for each event to be stored', formatDuration(PROBE_DEFAULTS.timeoutMs))
    .option('--endpoint <id>', 'only this endpoint (repeatable; default: every active endpoint the service lists)', collect)
    .option('--live', 'allow a probe on the live plane (it sends a real webhook.test to each endpoint)')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Each endpoint gets one webhook.test; postroom stores it and gives it to no handler. The report gives the round
trip (request to stored) per endpoint, or the step that failed:
  api_refused        the service refused the request (key, scope, endpoint id): see the error
  never_delivered    the service could not deliver it (URL, network, postroom answering 5xx or not at all)
  signature_refused  postroom answered 401: the endpoint's secret is not one postroom holds
  not_stored         the service took it as delivered, yet postroom has not stored it (run postroom audit)
An endpoint with a probe in flight (another replica or run), or probed in the last
${PROBE_DEFAULTS.minIntervalMs / 1000} s, is skipped.

Exit codes: 0 every probed endpoint answered, 2 a probe failed, 4 every endpoint was skipped, 1 error.

Examples:
  $ postroom probe
  $ postroom probe --endpoint ep_123 --timeout 30s --json | jq '.endpoints[] | {endpoint_id, outcome, round_trip_ms}'`,
    )
    .action(async (opts: { timeout: string; endpoint?: string[]; live?: boolean; json?: boolean }) => {
      const timeoutMs = parseDuration('--timeout', opts.timeout);
      const api = await apiClientFor(ctx);
      try {
        const db = await ctx.db();
        const { runProbe } = await import('../../probe/probe.js');
        const report = await runProbe(
          { db, api, logger: ctx.logger(), clock: systemClock },
          { timeoutMs, allowLive: Boolean(opts.live), ...(opts.endpoint ? { endpoints: opts.endpoint } : {}) },
        );
        if (opts.json) printJson(ctx.io, report);
        else printReport(ctx, report);
        ctx.exitCode = exitCodeOf(report);
      } finally {
        await api.close();
      }
    });
}

function exitCodeOf(report: ProbeReport): number {
  if (!report.ok) return PROBE_EXIT.failed;
  if (report.endpoints.length > 0 && report.endpoints.every((e) => e.outcome === 'skipped')) return PROBE_EXIT.skipped;
  return PROBE_EXIT.ok;
}

function printReport(ctx: CliContext, report: ProbeReport): void {
  if (report.endpoints.length === 0) {
    ctx.io.stdout.write('no active endpoint to probe: create one with `postroom endpoints create`\n');
    return;
  }
  printTable(
    ctx.io,
    report.endpoints.map((e) => ({ ...e, round_trip: e.round_trip_ms === null ? '-' : `${e.round_trip_ms} ms` })),
    ['endpoint_id', 'outcome', 'round_trip', 'event_id', 'detail'],
  );
  if (!report.ok) ctx.io.stdout.write('\nA probe failed: docs/runbook.md#postroomprobefailing says what to check for each step.\n');
}
