import { Option, type Command } from 'commander';
import type { DeliveryStatus, ListDeliveriesParams, WebhookDelivery } from '../../client/index.js';
import { apiClientFor } from '../api.js';
import type { CliContext } from '../context.js';
import { parseChoice, parseCount } from '../duration.js';
import { printJson, printTable } from '../output.js';

const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'dead'];

/** Page size when walking to the end; the spec shows no default or maximum. */
const PAGE_SIZE = 100;

export function registerDeliveriesCommands(program: Command, ctx: CliContext): Command {
  const deliveries = program
    .command('deliveries')
    .description("Look at the service's webhook delivery log: what it sent, to which endpoint, and what failed.")
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom deliveries list --status dead\n  $ postroom deliveries list --endpoint ep_123 --limit 20 --json`,
    );

  deliveries
    .command('list')
    .description('List delivery records, paged through to the end (or up to --limit).')
    .addOption(new Option('--status <status>', 'only this status').choices(DELIVERY_STATUSES))
    .option('--endpoint <endpoint_id>', 'only deliveries to this endpoint')
    .option('--limit <n>', 'at most this many (1-100000)')
    .option('--json', 'print a JSON array of delivery records')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom deliveries list --status dead                 missed events: reconcile them (postroom reconcile)
  $ postroom deliveries list --status dead --json | jq -r '.[].event_id'
  $ postroom deliveries list --endpoint ep_123 --limit 50`,
    )
    .action(async (opts: { status?: string; endpoint?: string; limit?: string; json?: boolean }) => {
      const limit = opts.limit === undefined ? undefined : parseCount('--limit', opts.limit, { min: 1, max: 100_000 });
      const params: ListDeliveriesParams = {
        limit: Math.min(limit ?? PAGE_SIZE, PAGE_SIZE),
        ...(opts.status !== undefined ? { status: parseChoice('--status', opts.status, DELIVERY_STATUSES) } : {}),
        ...(opts.endpoint !== undefined ? { endpoint_id: opts.endpoint } : {}),
      };
      const client = await apiClientFor(ctx);
      try {
        const rows: WebhookDelivery[] = [];
        // Collected before anything is printed: with --json, a page that fails half-way must leave
        // no partial array on stdout (complete JSON or nothing), and a table needs every row's width.
        for await (const d of client.webhookDeliveries.iterate(params)) {
          rows.push(d);
          if (limit !== undefined && rows.length >= limit) break;
        }
        if (opts.json) {
          printJson(ctx.io, rows);
          return;
        }
        printTable(
          ctx.io,
          rows.map((d) => ({ ...d, last_error: d.last_error?.replace(/\s+/g, ' ') })),
          ['delivery_id', 'endpoint_id', 'event_type', 'event_id', 'status', 'attempts', 'created_at', 'last_error'],
        );
      } finally {
        await client.close();
      }
    });
  return deliveries;
}
