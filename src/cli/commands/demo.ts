import type { Command } from 'commander';
import type { ComponentDeps } from '../../lifecycle/component.js';
import { PostroomError } from '../../errors.js';
import type { Queryable } from '../../db/types.js';
import { createLogger, type Logger } from '../../logging/logger.js';
import type { Sandbox, startSandbox as StartSandbox } from '../../sandbox/index.js';
import type { CliContext } from '../context.js';
import { parseCount } from '../duration.js';
import { waitForSignal } from '../signals.js';

/**
 * The whole loop on one machine with no set-up (`npm start`): the receiver on the
 * embedded store, the sandbox on loopback with the receiver's endpoint registered
 * through postroom's own client (its secret captured, never copied by hand),
 * realistic traffic with occasional failure windows that leave dead deliveries, the
 * worker, and the reconciler every 30 seconds, with a live one-line summary.
 */
export function registerDemoCommand(program: Command, ctx: CliContext): void {
  program
    .command('demo')
    .description(
      'Run the whole loop locally: sandbox service, receiver, worker, reconciler and a stream of traffic (what `npm start` runs).',
    )
    .option('--port <n>', 'receiver port', '8080')
    .option('--sandbox-port <n>', 'sandbox port', '8090')
    .option('--rate <n>', 'traffic operations per second (0: no traffic, just the receiver and sandbox)', '5')
    .option('--seed <n>', 'traffic and fault seed (default random)')
    .option('--failure-every <n>', 'open a failure window every n operations (0: never)', '200')
    .addHelpText(
      'after',
      `
Then, from another terminal:
  $ npx postroom send-sample                   a signed sample event from "outside"
  $ npx postroom sandbox trigger participant.acted --count 3 --key <sandbox key printed at start>
Stop with Ctrl-C; the embedded store keeps everything for \`postroom inbox stats\` and \`postroom gaps list\`.

Examples:
  $ npm start
  $ postroom demo --rate 20 --failure-every 100
  $ postroom demo --rate 0                     receiver and sandbox only`,
    )
    .action((opts: DemoFlags) => runDemo(ctx, opts));
}

interface DemoFlags {
  port: string;
  sandboxPort: string;
  rate: string;
  seed?: string;
  failureEvery: string;
}

async function runDemo(ctx: CliContext, opts: DemoFlags): Promise<void> {
  const config = ctx.config();
  config.ingress.port = parseCount('--port', opts.port, { min: 1, max: 65535 });
  const sandboxPort = parseCount('--sandbox-port', opts.sandboxPort, { min: 1, max: 65535 });
  const rate = parseCount('--rate', opts.rate, { min: 0, max: 1000 });
  const failureEvery = parseCount('--failure-every', opts.failureEvery, { min: 0, max: 1_000_000 });
  const seed = opts.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : parseCount('--seed', opts.seed, { min: 0, max: 2 ** 31 });
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel, destination: process.stderr as never });
  const io = ctx.io;
  // Loaded here, not at the CLI's start: every other command runs without the sandbox, server and client.
  const [
    { loadOrCreateDevSecret },
    { startServer },
    { createApiClient },
    { staticSecrets },
    reconcilerComponent,
    { sentLedger },
    sandboxModule,
    workerComponent,
  ] = await Promise.all([
    import('../../app/dev-secret.js'),
    import('../../app/server.js'),
    import('../../client/client.js'),
    import('../../secrets/secret-provider.js'),
    import('../../app/reconciler-component.js'),
    import('../../reconciler/state-queries.js'),
    import('../../sandbox/index.js'),
    import('../../app/worker-component.js'),
  ]);
  const { reconcilerComponentFactory } = reconcilerComponent;
  const { workerComponentFactory } = workerComponent;
  const { startSandbox, startTraffic, SUBSCRIBABLE_EVENT_TYPES } = sandboxModule;

  const sandbox = await startDemoSandbox(startSandbox, sandboxPort, seed, logger);
  const receiverUrl = `http://127.0.0.1:${config.ingress.port}`;
  const client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, logger });
  const endpoint = await client.webhookEndpoints.create({ url: `${receiverUrl}/webhooks`, events: [...SUBSCRIBABLE_EVENT_TYPES] });
  const dev = loadOrCreateDevSecret(config.database.dataDir);
  config.api.baseUrl = sandbox.url;
  config.api.apiKey = sandbox.apiKey;
  config.reconcileCron = '*/30 * * * * *';

  const server = await startServer({
    config,
    logger,
    role: 'all',
    secrets: staticSecrets([endpoint.secret, dev.secret]),
    components: [
      (deps: ComponentDeps) => workerComponentFactory(deps, { role: 'all', options: {} }),
      (deps: ComponentDeps) => reconcilerComponentFactory(deps, { role: 'all' }),
    ],
  }).catch(async (err) => {
    await sandbox.close();
    throw err;
  });

  io.stdout.write(
    `\npostroom demo (seed ${seed})\n` +
      `  receiver    ${server.url}/webhooks   store: ${server.db.kind === 'pglite' ? `embedded, ${config.database.dataDir}` : 'Postgres'}\n` +
      `  sandbox     ${sandbox.url}/sender/v2   key ${sandbox.apiKey}\n` +
      `  endpoint    ${endpoint.endpoint_id} registered through the API; its secret was stored, not printed\n` +
      `  metrics     ${server.url}/metrics\n\n` +
      `Send a signed sample event yourself:\n    npx postroom send-sample --url ${server.url}/webhooks\n\n`,
  );

  const traffic =
    rate > 0
      ? startTraffic({
          target: sandbox,
          seed,
          ratePerSecond: rate,
          failureWindows:
            failureEvery > 0 ? { everyOperations: failureEvery, durationMs: 12_000, endpointId: endpoint.endpoint_id } : false,
          onCorrespondenceCreated: (id) => sentLedger(server.db)({ correspondence_id: id }),
          logger,
        })
      : undefined;

  const line = (): Promise<string> => statusLine(sandbox, server.db);
  const timer = startStatusTicker(io, line);

  await waitForSignal();
  clearInterval(timer);
  io.stdout.write(`\n${await line().catch(() => '')}\nstopping…\n`);
  await traffic?.stop();
  await server.close();
  await client.close();
  await sandbox.close();
}

/** Short retries so a failure window turns deliveries dead within seconds, as the reconciler then shows. */
async function startDemoSandbox(startSandbox: typeof StartSandbox, port: number, seed: number, logger: Logger): Promise<Sandbox> {
  try {
    return await startSandbox({ port, allowPrivateTargets: true, retrySchedule: [1, 2, 4], attemptTimeoutMs: 3000, seed, logger });
  } catch (err) {
    throw new PostroomError(
      'demo_port',
      `could not start the sandbox on port ${port}: ${(err as Error).message}. Pass --sandbox-port with a free port.`,
      { cause: err },
    );
  }
}

/** One line on what the demo has done: events sent and delivered, accepted and processed, and what reconciling did. */
async function statusLine(sandbox: Sandbox, db: Queryable): Promise<string> {
  const s = sandbox.control.stats();
  const inbox = await db.query<{ status: string; source: string; n: number }>(
    'SELECT status, source, count(*)::int AS n FROM inbox GROUP BY status, source',
  );
  const gaps = await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM reconcile_gaps GROUP BY status');
  const runs = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconcile_runs WHERE outcome IN ('clean', 'gaps_open')`);
  const sum = (f: (r: { status: string; source: string; n: number }) => boolean): number =>
    inbox.rows.filter(f).reduce((a, r) => a + r.n, 0);
  const gap = (st: string): number => gaps.rows.find((g) => g.status === st)?.n ?? 0;
  return (
    `sent ${s.events} events | delivered ${s.deliveries.delivered}, dead ${s.deliveries.dead}` +
    ` | accepted ${sum((r) => r.source === 'webhook')}, processed ${sum((r) => r.status === 'processed')}` +
    ` | reconciled: ${runs.rows[0]?.n ?? 0} runs, ${sum((r) => r.source === 'reconciler')} events, gaps recovered ${gap('recovered')}, synced ${gap('state_synced')}, not consumed ${gap('not_consumed')}, open ${gap('open')}`
  );
}

/** The status line every second on a terminal (rewritten in place), every ten seconds otherwise. */
function startStatusTicker(io: CliContext['io'], line: () => Promise<string>): NodeJS.Timeout {
  const tty = Boolean(io.stdout.isTTY);
  let ticks = 0;
  return setInterval(() => {
    ticks++;
    if (!tty && ticks % 10 !== 0) return;
    line().then(
      (text) => io.stdout.write(tty ? `\r\x1b[2K${text}` : `${text}\n`),
      () => undefined,
    );
  }, 1000);
}
