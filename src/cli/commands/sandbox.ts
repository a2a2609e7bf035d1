import type { Command } from 'commander';
import { PostroomError, describeError } from '../../errors.js';
import { createLogger } from '../../logging/logger.js';
import { SIGNED_PAYLOAD_SCHEMES, type SignedPayloadScheme } from '../../signature/index.js';
import type { FaultConfig } from '../../sandbox/faults.js';
import { EVENT_TYPES, PARTICIPANT_ACTS } from '../../sandbox/catalogue.js';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_QUEUE_DELAY_MS, DEFAULT_RETRY_SCHEDULE } from '../../sandbox/defaults.js';
import { parseKeySpec, type KeySpec } from '../../sandbox/keys.js';
import type { CliContext } from '../context.js';
import { parseChoice, parseCount } from '../duration.js';
import { printJson } from '../output.js';
import { waitForSignal } from '../signals.js';

const DEFAULT_PORT = 8090;
const DEFAULT_URL = `http://127.0.0.1:${DEFAULT_PORT}`;

/** A decimal number of seconds within bounds, e.g. `0.5`, `10`. */
export function parseSeconds(flag: string, raw: string, bounds: { min: number; max: number }): number {
  const t = raw.trim();
  const n = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || n < bounds.min || n > bounds.max) {
    throw new PostroomError(
      'invalid_flag',
      `${flag}: expected seconds from ${bounds.min} to ${bounds.max} (decimals allowed, e.g. 0.5), got "${raw.slice(0, 40)}"`,
    );
  }
  return n;
}

/** `1,5,25` → [1, 5, 25]; `none` → no retries. */
export function parseRetrySchedule(flag: string, raw: string): number[] {
  if (raw.trim() === 'none') return [];
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 50 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p) || Number(p) > 86_400)) {
    throw new PostroomError(
      'invalid_flag',
      `${flag}: expected up to 50 comma-separated waits in seconds, each 0 to 86400 (e.g. 1,5,25 or 0.05,0.1), or "none", got "${raw.slice(0, 60)}"`,
    );
  }
  return parts.map(Number);
}

export function parseRate(flag: string, raw: string): number {
  const t = raw.trim();
  const n = Number(t);
  if (!/^\d*\.?\d+$/.test(t) || n > 1)
    throw new PostroomError('invalid_flag', `${flag}: expected a share from 0 to 1 (e.g. 0.1 for 10%), got "${raw.slice(0, 40)}"`);
  return n;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

interface SandboxFlags {
  port: string;
  host: string;
  key: string[];
  allowPrivateTargets?: boolean;
  retrySchedule: string;
  attemptTimeout: string;
  seed?: string;
  signedPayload: string;
  dropRate?: string;
  duplicateRate?: string;
  maxDelay?: string;
  reorderRate?: string;
  failShare?: string;
  queueDelay: string;
  json?: boolean;
}

export function registerSandboxCommand(program: Command, ctx: CliContext): void {
  const sandbox = program
    .command('sandbox')
    .description(
      'Run a local stand-in for the Correspondence Delivery Service: its /sender/v2 API and a signed webhook dispatcher with seeded fault injection.',
    )
    .enablePositionalOptions()
    .option('--port <n>', 'listen port', String(DEFAULT_PORT))
    .option('--host <addr>', 'listen address (the control routes need no more than a key: keep it on loopback)', '127.0.0.1')
    .option(
      '--key <api-key[:scope,…]>',
      'an API key the sandbox accepts (repeatable); without scopes it has every scope; the prefix svc_sandbox_ or svc_live_ picks the plane',
      collect,
      [],
    )
    .option('--allow-private-targets', 'accept loopback and private webhook URLs, and plain http to them (for a receiver on this machine)')
    .option('--retry-schedule <seconds,…>', 'waits before attempts 2, 3, …; "none" for a single attempt', DEFAULT_RETRY_SCHEDULE.join(','))
    .option('--attempt-timeout <seconds>', 'a reply slower than this is a failed attempt', String(DEFAULT_ATTEMPT_TIMEOUT_MS / 1000))
    .option('--seed <n>', 'seed for every fault decision (default: random, printed)')
    .option('--signed-payload <scheme>', `what the signature covers: ${SIGNED_PAYLOAD_SCHEMES.join(' | ')}`, 'body')
    .option('--drop-rate <share>', 'share of attempts lost on the way (retried)')
    .option('--duplicate-rate <share>', 'share of delivered events sent again (their 2xx treated as lost)')
    .option('--max-delay <seconds>', 'each attempt waits a random 0..this before it is sent')
    .option('--reorder-rate <share>', 'share of deliveries held back so later events overtake them')
    .option('--fail-share <share>', 'share of deliveries that fail every attempt and end dead')
    .option('--queue-delay <seconds>', 'how long a queued (202) send takes to complete', String(DEFAULT_QUEUE_DELAY_MS / 1000))
    .option('--json', 'print the URL, keys and seed as one JSON line on stdout (for scripts)')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom sandbox --allow-private-targets
        API on http://127.0.0.1:${DEFAULT_PORT}/sender/v2 with a generated key (printed), webhooks to local receivers allowed
  $ postroom sandbox --key svc_sandbox_dev123 --key svc_sandbox_readonly:webhooks.read,correspondence.read
  $ postroom sandbox --allow-private-targets --retry-schedule 0.5,1,2 --attempt-timeout 2 --seed 42 --duplicate-rate 0.1 --reorder-rate 0.2
  $ postroom sandbox trigger participant.acted --count 5 --key svc_sandbox_dev123

Register a receiver (its secret is in the answer, once):
  $ curl -s -X POST http://127.0.0.1:${DEFAULT_PORT}/sender/v2/webhook-endpoints -H "Authorization: Bearer $KEY" \\
      -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:8080/webhooks","events":["participant.acted"]}'

Sandbox-only control routes (acts, verification, seal, withdraw, claims, faults, failure windows) are under /sandbox;
see docs/sandbox.md. Not part of the service.`,
    )
    .action((opts: SandboxFlags) => runSandbox(ctx, opts));
  registerTrigger(sandbox, ctx);
}

function registerTrigger(sandbox: Command, ctx: CliContext): void {
  sandbox
    .command('trigger')
    .description('Fire events at a running sandbox (each through a real state change, with whatever else that change fires).')
    .argument('<type>', `event type: ${EVENT_TYPES.join(' | ')}`)
    .option('--count <n>', 'how many events of that type', '1')
    .option('--url <url>', `the sandbox (default POSTROOM_API_BASE_URL, else ${DEFAULT_URL})`)
    .option('--key <api-key>', 'an API key the sandbox accepts (default POSTROOM_API_KEY)')
    .option('--act <act>', `participant.acted only: ${PARTICIPANT_ACTS.join(' | ')}`)
    .option('--json', 'print the fired events as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom sandbox trigger correspondence.created --key svc_sandbox_dev123
  $ postroom sandbox trigger participant.acted --count 20 --act approved --key svc_sandbox_dev123
  $ POSTROOM_API_KEY=svc_sandbox_dev123 postroom sandbox trigger webhook.test --url http://127.0.0.1:${DEFAULT_PORT}`,
    )
    .action(async (type: string, flags: { count: string; url?: string; key?: string; act?: string; json?: boolean }) => {
      // The root program does not use positional options, so `--key`/`--json` after `trigger` are parsed
      // by the parent `sandbox` command (which has flags of the same names): take them from there too.
      const parent = sandbox.opts<{ key: string[]; json?: boolean }>();
      const opts = { ...flags, key: flags.key ?? parent.key.at(-1), json: flags.json ?? parent.json };
      const eventType = parseChoice('<type>', type, EVENT_TYPES);
      const count = parseCount('--count', opts.count, { min: 1, max: 10_000 });
      const act = opts.act === undefined ? undefined : parseChoice('--act', opts.act, PARTICIPANT_ACTS);
      const key = opts.key ?? ctx.config().api.apiKey;
      if (!key)
        throw new PostroomError('invalid_flag', '--key: no API key; pass the key `postroom sandbox` printed, or set POSTROOM_API_KEY');
      const base = sandboxBase(opts.url ?? ctx.config().api.baseUrl ?? DEFAULT_URL);
      let res;
      try {
        const { request } = await import('undici');
        res = await request(`${base}/sandbox/trigger`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: eventType, count, ...(act ? { act } : {}) }),
          headersTimeout: 60_000,
          bodyTimeout: 60_000,
        });
      } catch (err) {
        throw new PostroomError(
          'sandbox_unreachable',
          `Could not reach the sandbox at ${base}: ${describeError(err)}. Is \`postroom sandbox\` running there?`,
          { cause: err },
        );
      }
      const text = await res.body.text();
      type Summary = { event_id: string; type: string; correspondence_id: string | null };
      let body: { fired?: Summary[]; events?: Summary[]; error?: { code?: string; message?: string } } = {};
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        // Not the sandbox answering: reported below with the status.
      }
      if (res.statusCode !== 200 || !body.events || !body.fired) {
        const why = body.error?.message ?? text.slice(0, 200);
        throw new PostroomError(
          'trigger_failed',
          `The sandbox at ${base} answered ${res.statusCode}${body.error?.code ? ` ${body.error.code}` : ''}: ${why}`,
        );
      }
      if (opts.json) {
        printJson(ctx.io, body);
        return;
      }
      ctx.io.stdout.write(
        `fired ${body.fired.length} ${eventType} event(s) (${body.events.length} in all, with what the changes also fired)\n`,
      );
      for (const e of body.events)
        ctx.io.stdout.write(`  ${e.event_id}  ${e.type}${e.correspondence_id ? `  ${e.correspondence_id}` : ''}\n`);
    });
}

/** `postroom sandbox`: starts the sandbox, says where it listens, and runs until a signal. */
async function runSandbox(ctx: CliContext, opts: SandboxFlags): Promise<void> {
  const port = parseCount('--port', opts.port, { min: 0, max: 65535 });
  const keys: KeySpec[] = opts.key.map((k) => parseKeySpec(k, '--key'));
  const generated = keys.length === 0;
  const retrySchedule = parseRetrySchedule('--retry-schedule', opts.retrySchedule);
  const attemptTimeoutMs = Math.round(parseSeconds('--attempt-timeout', opts.attemptTimeout, { min: 0.01, max: 600 }) * 1000);
  const seed = opts.seed === undefined ? undefined : parseCount('--seed', opts.seed, { min: 0, max: 0xffff_ffff });
  const signedPayload: SignedPayloadScheme = parseChoice('--signed-payload', opts.signedPayload, SIGNED_PAYLOAD_SCHEMES);
  const queueDelayMs = Math.round(parseSeconds('--queue-delay', opts.queueDelay, { min: 0, max: 3600 }) * 1000);
  const faults = faultsFromFlags(opts);

  const config = ctx.config();
  // Results (the banner, --json) go to stdout; logs (dead deliveries, errors) stay on stderr unless a person is watching.
  const pretty = !opts.json && Boolean(process.stdout.isTTY);
  const logger = createLogger({ level: config.logLevel, pretty, ...(pretty ? {} : { destination: process.stderr as never }) });
  const { createSandbox } = await import('../../sandbox/index.js');
  const sb = createSandbox({
    ...(generated ? {} : { keys }),
    allowPrivateTargets: opts.allowPrivateTargets ?? false,
    retrySchedule,
    attemptTimeoutMs,
    signedPayload,
    queueDelayMs,
    faults,
    logger,
    ...(seed === undefined ? {} : { seed }),
  });
  try {
    await sb.listen(port, opts.host);
  } catch (err) {
    await sb.close();
    throw err;
  }
  printBanner(ctx, opts, sb, { generated, keyCount: keys.length, retrySchedule, attemptTimeoutMs });
  await waitForSignal();
  await sb.close();
}

function faultsFromFlags(opts: SandboxFlags): Partial<FaultConfig> {
  const faults: Partial<FaultConfig> = {};
  if (opts.dropRate !== undefined) faults.dropRate = parseRate('--drop-rate', opts.dropRate);
  if (opts.duplicateRate !== undefined) faults.duplicateRate = parseRate('--duplicate-rate', opts.duplicateRate);
  if (opts.maxDelay !== undefined) faults.maxDelayMs = Math.round(parseSeconds('--max-delay', opts.maxDelay, { min: 0, max: 600 }) * 1000);
  if (opts.reorderRate !== undefined) faults.reorderRate = parseRate('--reorder-rate', opts.reorderRate);
  if (opts.failShare !== undefined) faults.failShare = parseRate('--fail-share', opts.failShare);
  return faults;
}

function printBanner(
  ctx: CliContext,
  opts: SandboxFlags,
  sb: { url: string; apiUrl: string; apiKey: string; seed: number },
  shown: { generated: boolean; keyCount: number; retrySchedule: readonly number[]; attemptTimeoutMs: number },
): void {
  const { generated, retrySchedule, attemptTimeoutMs } = shown;
  const io = ctx.io;
  if (opts.json) {
    printJsonLine(io.stdout, {
      url: sb.url,
      api_url: sb.apiUrl,
      control_url: `${sb.url}/sandbox`,
      seed: sb.seed,
      ...(generated ? { api_key: sb.apiKey } : {}),
    });
  } else {
    io.stdout.write(
      `\npostroom sandbox listening on ${sb.url}\n` +
        `  API       ${sb.apiUrl}   (Authorization: Bearer <key>)\n` +
        `  control   ${sb.url}/sandbox   (sandbox-only, see docs/sandbox.md)\n` +
        (generated
          ? `  API key   ${sb.apiKey}   (generated, every scope; pass --key to choose your own)\n`
          : `  API keys  ${shown.keyCount} given (only their hashes are kept)\n`) +
        `  seed ${sb.seed}, retries after ${retrySchedule.length ? retrySchedule.join(', ') : 'none'} s, attempt time-out ${attemptTimeoutMs / 1000} s, ` +
        `${opts.allowPrivateTargets ? 'private targets allowed' : 'public https targets only'}\n\n` +
        `Fire events:  npx postroom sandbox trigger correspondence.created --url ${sb.url}${generated ? ` --key ${sb.apiKey}` : ' --key <key>'}\n` +
        `Ctrl-C stops it.\n\n`,
    );
  }
}

/** The sandbox root from a URL that may end in /sender/v2. */
function sandboxBase(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new PostroomError('invalid_flag', `--url: expected an http(s) URL such as ${DEFAULT_URL}, got "${raw.slice(0, 80)}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new PostroomError('invalid_flag', `--url: expected an http or https URL, got ${u.protocol}`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/sender\/v2$/, '')}`;
}

function printJsonLine(out: NodeJS.WritableStream, value: unknown): void {
  out.write(`${JSON.stringify(value)}\n`);
}
