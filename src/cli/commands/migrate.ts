import type { Command } from 'commander';
import { migrate, migrationStatus } from '../../db/migrate.js';
import type { CliContext } from '../context.js';
import { printJson } from '../output.js';

export function registerMigrateCommand(program: Command, ctx: CliContext): void {
  program
    .command('migrate')
    .description('Apply pending database migrations (safe to run from several replicas at once).')
    .option('--status', 'only show which migrations are applied and pending')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      `
Moving an existing inbox into the partitioned layout (migrations 023 and 024) runs in batches while
ingress keeps serving; progress goes to stderr, and an interrupted run resumes where it stopped.
See docs/retention.md, "Upgrading".

Examples:
  $ DATABASE_URL=postgres://postroom@db/postroom postroom migrate
  $ postroom migrate --status --json`,
    )
    .action(async (opts: { status?: boolean; json?: boolean }) => {
      const db = await ctx.db();
      if (opts.status) {
        const s = await migrationStatus(db);
        const out = { applied: s.applied, pending: s.pending.map((p) => `${p.version}_${p.name}`), unknown: s.unknown, current: s.current };
        if (opts.json) printJson(ctx.io, out);
        else ctx.io.stdout.write(`applied: ${out.applied.join(', ') || '(none)'}\npending: ${out.pending.join(', ') || '(none)'}\n`);
        return;
      }
      // The inbox's move into partitions runs in batches with ingress serving (docs/retention.md): say how far it got.
      let said = 0;
      const { applied } = await migrate(db, {
        onProgress: (p) => {
          if (Date.now() - said < 5000 && p.done < p.total) return;
          said = Date.now();
          const what = p.step === 'ledger' ? 'event ids into the ledger: page' : 'history into partitions: row';
          ctx.io.stderr.write(`migrate: ${what} ${p.done} of ${p.step === 'ledger' ? '' : 'about '}${p.total}\n`);
        },
      });
      const names = applied.map((a) => `${a.version}_${a.name}`);
      if (opts.json) printJson(ctx.io, { applied: names });
      else ctx.io.stdout.write(names.length ? `applied ${names.join(', ')}\n` : 'database is up to date\n');
    });
}
