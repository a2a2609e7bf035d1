import type { Command } from 'commander';
import { PostroomError } from '../../errors.js';
import { getProjectedCorrespondence } from '../../projection/read.js';
import type { CliContext } from '../context.js';
import { printJson, printTable } from '../output.js';

/** `correspondence show <id>`: the projection, as postroom's events describe it. */
export function registerCorrespondenceCommands(program: Command, ctx: CliContext): void {
  const group = program
    .command('correspondence')
    .description('What the events received so far say about a correspondence (the projection).')
    .addHelpText('after', `\nExample:\n  $ postroom correspondence show cor_01HZX3K9Q7`);

  group
    .command('show <correspondence_id>')
    .description('Lifecycle status, participants with their state and last act, the send summary and the last event applied.')
    .option('--json', 'print the projection as JSON (field names follow GET /correspondence/{id})')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom correspondence show cor_01HZX3K9Q7\n  $ postroom correspondence show cor_01HZX3K9Q7 --json | jq '.participants[] | select(.state != "delivered")'`,
    )
    .action(async (id: string, opts: { json?: boolean }) => {
      const c = await getProjectedCorrespondence(await ctx.db(), id);
      if (!c)
        throw new PostroomError(
          'not_found',
          `No event has named correspondence ${id} yet. Check the id, or look for its events with \`postroom inbox list\`.`,
        );
      if (opts.json) {
        printJson(ctx.io, c);
        return;
      }
      const s = c.send_summary;
      const lines: Array<[string, string]> = [
        ['correspondence_id', c.correspondence_id],
        ['status', c.status ?? '(unknown: no lifecycle event yet)'],
        ['kind', c.kind ?? ''],
        ['subject', c.subject ?? ''],
        ['created_at', c.created_at ?? ''],
        ['documents', c.document_ids.join(', ')],
        ['send_summary', s ? `delivered ${s.delivered}, held ${s.held}, undeliverable ${s.undeliverable} of ${s.total}` : '(none yet)'],
        ['last_event', `${c.last_event.type} ${c.last_event.event_id} at ${c.last_event.at}`],
        ['updated_at', c.updated_at],
      ];
      for (const [k, v] of lines) ctx.io.stdout.write(`${k.padEnd(18)} ${v}\n`);
      ctx.io.stdout.write(`\nparticipants (${c.participants.length})\n`);
      printTable(ctx.io, c.participants as unknown as Array<Record<string, unknown>>, [
        'participant_id',
        'ref',
        'state',
        'last_act',
        'last_act_at',
      ]);
    });
}
