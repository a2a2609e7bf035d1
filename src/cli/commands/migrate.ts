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
      const { applied } = await migrate(db);
      const names = applied.map((a) => `${a.version}_${a.name}`);
      if (opts.json) printJson(ctx.io, { applied: names });
      else ctx.io.stdout.write(names.length ? `applied ${names.join(', ')}\n` : 'database is up to date\n');
    });
}
