import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Command } from 'commander';
import { systemClock } from '../../clock.js';
import { migrate, migrationStatus } from '../../db/migrate.js';
import { PostroomError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { parseCount, parseDuration } from '../duration.js';
import { printJson, printTable } from '../output.js';
import { waitForSignal } from '../signals.js';

const DEFAULT_PORT = 8099;

/** `postroom console`: the on-call console on this machine, against any store; `console audit`: what was done in it. */
export function registerConsoleCommand(program: Command, ctx: CliContext): void {
  const group = program
    .command('console')
    .description('Open the on-call console in your browser, against this configuration’s store (the embedded one too), until Ctrl-C.')
    .option('--port <n>', `listen port (default POSTROOM_CONSOLE_PORT, else ${DEFAULT_PORT}; 0 for any free port)`)
    .option('--host <addr>', 'listen address (default POSTROOM_CONSOLE_HOST, else 127.0.0.1)')
    .option('--open', 'open the address in your browser')
    .addHelpText(
      'after',
      `
Without POSTROOM_CONSOLE_TOKENS_FILE a one-time token is made for this run and printed in the address:
whoever opens it is an operator named after your user. With a tokens file, log in with a token from it.
\`postroom serve\` serves the same console on its admin listener (docs/console.md).

Examples:
  $ postroom console --open
  $ DATABASE_URL=postgres://… postroom console --port 9000
  $ postroom console audit --since 7d`,
    )
    .action(async (opts: { port?: string; host?: string; open?: boolean }) => {
      const config = ctx.config();
      const port =
        opts.port !== undefined ? parseCount('--port', opts.port, { min: 0, max: 65535 }) : (config.console.port ?? DEFAULT_PORT);
      const host = opts.host ?? config.console.host;
      const db = await ctx.db();
      if (db.kind === 'pglite') await migrate(db, { logger: ctx.logger() });
      else {
        const status = await migrationStatus(db);
        if (!status.current)
          throw new PostroomError(
            'schema_behind',
            `the store lacks migration(s) ${status.pending.map((m) => `${m.version}_${m.name}`).join(', ')}: run \`postroom migrate\` first`,
          );
      }
      const configured = config.console.tokensFile !== undefined || config.console.trustedUserHeader !== undefined;
      const token = configured ? undefined : randomBytes(24).toString('base64url');
      const { startConsoleServer } = await import('../../app/console-listener.js');
      const { createMetrics } = await import('../../metrics/metrics.js');
      const server = await startConsoleServer({
        config,
        db,
        logger: ctx.logger(),
        metrics: createMetrics({ version: 'console' }),
        clock: systemClock,
        host,
        port,
        ...(token ? { localLogin: { name: localName(), token } } : {}),
      });
      const address = token ? `${server.url}/login?token=${token}` : server.url;
      ctx.io.stdout.write(
        `postroom console on ${db.kind === 'pglite' ? `the embedded store in ${config.database.dataDir}` : 'Postgres'}:\n\n    ${address}\n\n` +
          (token ? 'The address holds a token made for this run: share it only with whoever may act as you.\n' : '') +
          'Ctrl-C stops it.\n',
      );
      if (opts.open) openInBrowser(address);
      await waitForSignal();
      await server.close();
    });

  group
    .command('audit')
    .description(
      'What operators did in the console and with the CLI: replays, ignored gaps, reconcile runs and reveals of personal data, newest first.',
    )
    .option('--since <duration>', 'only entries within this window, e.g. 7d')
    .option('--actor <name>', 'only what this person did')
    .option('--limit <n>', 'at most this many (1-10000)', '100')
    .option('--json', 'print a JSON array')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom console audit --since 24h\n  $ postroom console audit --actor alice --json | jq '.[] | select(.action == "reveal")'`,
    )
    .action(async (opts: { since?: string; actor?: string; limit: string; json?: boolean }) => {
      const filter = {
        since: opts.since === undefined ? undefined : new Date(Date.now() - parseDuration('--since', opts.since)),
        actor: opts.actor,
        limit: parseCount('--limit', opts.limit, { min: 1, max: 10_000 }),
      };
      const { listAudit } = await import('../../console/index.js');
      const rows = await listAudit(await ctx.db(), filter);
      if (opts.json) {
        printJson(ctx.io, rows);
        return;
      }
      printTable(
        ctx.io,
        rows.map((r) => ({ ...r, who: `${r.actor} (${r.role}, ${r.via})`, detail: JSON.stringify(r.detail) })),
        ['at', 'who', 'action', 'target', 'affected', 'detail'],
      );
    });
}

function localName(): string {
  try {
    return `${os.userInfo().username}@local`;
  } catch {
    return 'local';
  }
}

/** Best effort: the platform's opener, detached; the address is printed either way. */
function openInBrowser(address: string): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [address]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', address]]
        : ['xdg-open', [address]];
  try {
    const child = spawn(cmd, args as string[], { detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // the address is on the screen
  }
}
